"""Which of the ``fast`` tier's fused training kernels pay on this device: each model of
bench/step_time.py timed (replayed f32 steps) under ``prod``, under ``fast`` with every
fusion, and under ``fast`` with one fusion left out at a time (``fast-native_math``:
the polynomial exp and log instead of the adapter's own).

    PYTHONPATH=src python3 bench/fast_ablation.py [--models char_tf,tf_d384] [--out F]
    PYTHONPATH=src python3 bench/fast_ablation.py --models '' --records tcn_forecaster

A fusion whose removal makes the step faster costs time on this device; the ratio
column is each variant's step over ``prod``'s (under 1: faster than prod). The fusions
kept to software adapters (``kernel_choice.SOFTWARE_ONLY``) are left out on a GPU by
the tier itself; ``fast+everywhere`` runs them there too, to measure them again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import step_time  # noqa: E402  (bench/step_time.py: the models and the timed loop)

import scellis as sc  # noqa: E402
from scellis.devices import kernel_choice  # noqa: E402
from scellis.devices.kernel_choice import FUSIONS  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402
from scellis.run.conformance import load_dataset, train_steps  # noqa: E402
from scellis.train import determinism  # noqa: E402


def _variants() -> dict[str, frozenset]:
    out = {"fast": FUSIONS, "fast+everywhere": FUSIONS, "fast-native_math": FUSIONS}
    for name in sorted(FUSIONS):
        out[f"fast-{name}"] = FUSIONS - {name}
    return out


@contextlib.contextmanager
def _fast_with(fusions: frozenset, everywhere: bool = False, native: bool = True):
    """The fast tier with only ``fusions`` (``everywhere``: the software-only fusions on
    this device too; ``native``: the adapter's exp and log), while the block runs."""
    saved, kept = determinism.KERNELS["fast"], kernel_choice.SOFTWARE_ONLY
    determinism.KERNELS["fast"] = dataclasses.replace(
        saved, fusions=fusions, native_math=native and saved.native_math
    )
    if everywhere:
        kernel_choice.SOFTWARE_ONLY = frozenset()
    try:
        yield
    finally:
        determinism.KERNELS["fast"], kernel_choice.SOFTWARE_ONLY = saved, kept


def _model_ms(name: str, dev, a, tier: str) -> float:
    """ms per replayed step of bench/step_time.py's model ``name``."""
    cfg = step_time.CONFIGS[name]
    return step_time.scellis_run(cfg, dev, True, "auto", "f32", a, tier)["ms"]


def _record_ms(name: str, dev, a, tier: str) -> float:
    """Median steady step (ms) of the example record ``name`` on its own data, as
    bench/conformance.py times it (the steps after the three recorded eagerly)."""
    record = load_record(str(ROOT / "examples" / f"{name}.sml"))
    ds = load_dataset(record, ROOT / "examples")
    times = []
    for _ in range(a.repeats):
        o = asyncio.run(train_steps(record, dev, tier, a.steps + 3, dataset=ds))
        times += o.step_seconds[3:]
    return 1e3 * statistics.median(times)


def _ablate(name: str, timer, dev, a) -> dict:
    prod = timer(name, dev, a, "prod")
    row = {"prod": prod}
    print(f"{name:>16} {'prod':>24} {prod:9.2f} ms")
    for label, fusions in _variants().items():
        everywhere, native = label == "fast+everywhere", label != "fast-native_math"
        with _fast_with(fusions, everywhere, native):
            row[label] = ms = timer(name, dev, a, "fast")
        print(f"{name:>16} {label:>24} {ms:9.2f} ms  / prod {ms / prod:5.2f}")
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="webgpu")
    p.add_argument("--models", default=",".join(step_time.CONFIGS))
    p.add_argument(
        "--records",
        default="",
        help="example records, as bench/conformance.py "
        "runs them (e.g. tcn_forecaster); --models '' for these alone",
    )
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="bench/out/fast_ablation.json")
    a = p.parse_args(argv)
    dev = sc.devices.get_device(a.device)
    print(f"device {a.device} ({getattr(getattr(dev, 'info', None), 'name', a.device)})")
    results = {}
    for name in filter(None, a.models.split(",")):
        results[name] = _ablate(name, _model_ms, dev, a)
    for name in filter(None, a.records.split(",")):
        results[name] = _ablate(name, _record_ms, dev, a)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"device": a.device, "results": results}, indent=2))
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
