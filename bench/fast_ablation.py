"""Which of the ``fast`` tier's fused training kernels pay on this device: each model of
bench/step_time.py timed (replayed f32 steps) under ``prod``, under ``fast`` with every
fusion, and under ``fast`` with one fusion left out at a time (``fast-native_math``:
the polynomial exp and log instead of the adapter's own).

    PYTHONPATH=src python3 bench/fast_ablation.py [--models char_tf,tf_d384] [--out F]

A fusion whose removal makes the step faster costs time on this device; the ratio
column is each variant's step over ``prod``'s (under 1: faster than prod). The fusions
kept to software adapters (``kernel_choice.SOFTWARE_ONLY``) are left out on a GPU by
the tier itself; ``fast+everywhere`` runs them there too, to measure them again.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import step_time  # noqa: E402  (bench/step_time.py: the models and the timed loop)

import scellis as sc  # noqa: E402
from scellis.devices import kernel_choice  # noqa: E402
from scellis.devices.kernel_choice import FUSIONS  # noqa: E402
from scellis.train import determinism  # noqa: E402


def _variants() -> dict[str, frozenset]:
    out = {"fast": FUSIONS, "fast+everywhere": FUSIONS, "fast-native_math": FUSIONS}
    for name in sorted(FUSIONS):
        out[f"fast-{name}"] = FUSIONS - {name}
    return out


def _timed(
    cfg, dev, a, fusions: frozenset | None, everywhere: bool = False, native: bool = True
) -> float:
    """ms per replayed step under prod (``fusions`` None) or fast with ``fusions``
    (``everywhere``: the software-only fusions on this device too; ``native``: the
    adapter's exp and log)."""
    if fusions is None:
        return step_time.scellis_run(cfg, dev, True, "auto", "f32", a, "prod")["ms"]
    saved, kept = determinism.KERNELS["fast"], kernel_choice.SOFTWARE_ONLY
    determinism.KERNELS["fast"] = dataclasses.replace(
        saved, fusions=fusions, native_math=native and saved.native_math
    )
    if everywhere:
        kernel_choice.SOFTWARE_ONLY = frozenset()
    try:
        return step_time.scellis_run(cfg, dev, True, "auto", "f32", a, "fast")["ms"]
    finally:
        determinism.KERNELS["fast"], kernel_choice.SOFTWARE_ONLY = saved, kept


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="webgpu")
    p.add_argument("--models", default=",".join(step_time.CONFIGS))
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="bench/out/fast_ablation.json")
    a = p.parse_args(argv)
    dev = sc.devices.get_device(a.device)
    print(f"device {a.device} ({getattr(getattr(dev, 'info', None), 'name', a.device)})")
    results = {}
    for name in a.models.split(","):
        cfg = step_time.CONFIGS[name]
        prod = _timed(cfg, dev, a, None)
        row = {"prod": prod}
        print(f"{name:>10} {'prod':>24} {prod:9.2f} ms")
        for label, fusions in _variants().items():
            everywhere, native = label == "fast+everywhere", label != "fast-native_math"
            row[label] = ms = _timed(cfg, dev, a, fusions, everywhere, native)
            print(f"{name:>10} {label:>24} {ms:9.2f} ms  / prod {ms / prod:5.2f}")
        results[name] = row
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"device": a.device, "results": results}, indent=2))
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
