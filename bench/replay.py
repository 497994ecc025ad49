"""Host milliseconds per training step, eager vs schedule replay, on the example models.

Models (the shapes of examples/*.sml):
  lstm_forecaster   LSTM(32) on [32, 20, 1] windows, Linear to 1, MSE, Adam 0.01
  char_transformer  vocab 88, context 32, d_model 64, 4 heads, 2 decoder layers,
                    batch 16, cross-entropy, AdamW 3e-3, grad_clip max_norm 1.0
Each step is the training loop's full step (train/loop.py: forward, loss, backward,
finite-flag guard, clipping, gated optimizer update, loss accumulation), eager or
``replay=True``. Method: ``--warmup`` steps (compiles, pool fill; replay records
during them and must be ready after), then ``--steps`` timed steps cycling over 4
batches already on the device. ``host ms`` is the time inside the step calls
(Python, encoding, submission; GPU work is queued, not awaited); ``wall ms`` is the
timed block ending with one loss readback, divided by the steps, so device time is
in it. ``py ms`` is host ms less the time inside queue submissions: on lavapipe a
submission runs the queued work on the CPU before returning, so only py ms isolates
the host-side cost there (on a real GPU a submission returns at once and the two
agree). Medians over ``--repeats`` blocks. Also reported: dispatches per step, and
whether the two runs' logged losses and final weights are bitwise equal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import scellis as sc  # noqa: E402
from scellis.base.rng import Generator  # noqa: E402
from scellis.catalog.losses import CrossEntropyLoss, MSELoss  # noqa: E402
from scellis.catalog.optim import Adam, AdamW  # noqa: E402
from scellis.model.zoo import CharTransformer, LSTMForecaster  # noqa: E402
from scellis.train.fit_config import FitConfig  # noqa: E402
from scellis.train.loop import _Run  # noqa: E402
from scellis.train.state import TrainState  # noqa: E402


def _lstm(dev, rng):
    model = LSTMForecaster(1, 32, 1, 1, device=dev, gen=Generator(0, "init"))
    batches = [
        (
            sc.tensor(rng.standard_normal((32, 20, 1)), device=dev, dtype="f32"),
            sc.tensor(rng.standard_normal((32, 1)), device=dev, dtype="f32"),
        )
        for _ in range(4)
    ]
    return model, MSELoss(), Adam(model, lr=0.01), batches, None


def _char(dev, rng):
    model = CharTransformer(88, 64, 4, 2, 32, device=dev, gen=Generator(0, "init"))
    batches = [
        (
            sc.tensor(rng.integers(0, 88, (16, 32)), device=dev, dtype="i32"),
            sc.tensor(rng.integers(0, 88, (16, 32)), device=dev, dtype="i32"),
        )
        for _ in range(4)
    ]
    opt = AdamW(model, lr=3e-3, weight_decay=0.01)
    return model, CrossEntropyLoss(), opt, batches, 1.0


MODELS = {"lstm_forecaster": _lstm, "char_transformer": _char}


def _opts(replay: bool, clip) -> FitConfig:
    return FitConfig(
        epochs=1,
        determinism_tier="debug",
        val_data=None,
        eval_every=None,
        log_every=10**9,
        grad_clip=clip,
        precision=None,
        early_stopping=None,
        skip_nonfinite=True,
        replay=replay,
        plateau_metric="loss",
    )


def _time_submissions(dev) -> list:
    """Accumulate the seconds spent in the adapter's flush (where queue.submit runs)."""
    acc = [0.0]
    gpu = getattr(dev, "gpu", None)
    if gpu is None or not hasattr(gpu, "flush"):
        return acc
    inner = gpu.flush

    def flush():
        t0 = time.perf_counter()
        inner()
        acc[0] += time.perf_counter() - t0

    gpu.flush = flush
    return acc


def _untime(dev) -> None:
    gpu = getattr(dev, "gpu", None)
    if gpu is not None and "flush" in vars(gpu):
        del gpu.flush


def measure(name: str, dev, replay: bool, warmup: int, steps: int, repeats: int) -> dict:
    model, loss, opt, batches, clip = MODELS[name](dev, np.random.default_rng(0))
    r = _Run(TrainState(model, opt), loss, None, _opts(replay, clip))
    model.train()
    k = 0
    for _ in range(warmup):
        r.step(*batches[k % 4])
        k += 1
    asyncio.run(r.log())
    host, wall, losses, py = [], [], [], []
    before = dev.stats["dispatches"] if hasattr(dev, "stats") else 0
    submit = _time_submissions(dev)
    for _ in range(repeats):
        spent = 0.0
        submit[0] = 0.0
        t0 = time.perf_counter()
        for _ in range(steps):
            s0 = time.perf_counter()
            r.step(*batches[k % 4])
            spent += time.perf_counter() - s0
            k += 1
        ev = asyncio.run(r.log())  # one readback: the block's device work is done
        wall.append((time.perf_counter() - t0) / steps * 1e3)
        host.append(spent / steps * 1e3)
        py.append((spent - submit[0]) / steps * 1e3)
        losses.append(ev["loss"])
    per_step = None
    if hasattr(dev, "stats"):
        per_step = (dev.stats["dispatches"] - before) / (steps * repeats)
    rec = r.replay.record() if r.replay is not None else None
    weights = {n: np.asarray(v.tolist()) for n, v in model.state_dict().items()}
    if r.replay is not None:
        r.replay.close()
    _untime(dev)
    return {
        "py_ms": statistics.median(py),
        "host_ms": statistics.median(host),
        "wall_ms": statistics.median(wall),
        "dispatches_per_step": per_step,
        "losses": losses,
        "weights": weights,
        "replay": rec,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="webgpu")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="bench/out/replay.json")
    a = p.parse_args(argv)
    dev = sc.devices.get_device(a.device)
    info = getattr(dev, "info", None)
    print("device:", a.device, getattr(info, "name", ""))
    print(f"{'model':>17} {'mode':>7} {'py ms':>9} {'host ms':>9} {'wall ms':>9} {'disp/step':>9}")
    results = {}
    for name in a.models.split(","):
        eager = measure(name, dev, False, a.warmup, a.steps, a.repeats)
        rep = measure(name, dev, True, a.warmup, a.steps, a.repeats)
        same = eager["losses"] == rep["losses"] and all(
            np.array_equal(eager["weights"][k], rep["weights"][k]) for k in eager["weights"]
        )
        for mode, m in (("eager", eager), ("replay", rep)):
            d = m["dispatches_per_step"]
            print(
                f"{name:>17} {mode:>7} {m['py_ms']:9.2f} {m['host_ms']:9.2f} {m['wall_ms']:9.2f} "
                f"{'-' if d is None else f'{d:.0f}':>9}"
            )
        print(f"{'':>17} replay record: {rep['replay']}; bitwise equal to eager: {same}")
        results[name] = {
            mode: {k: v for k, v in m.items() if k != "weights"}
            for mode, m in (("eager", eager), ("replay", rep))
        }
        results[name]["bitwise_equal"] = same
        results[name]["host_speedup"] = eager["host_ms"] / max(rep["host_ms"], 1e-9)
        results[name]["py_speedup"] = eager["py_ms"] / max(rep["py_ms"], 1e-9)
    out = {"device": a.device, "adapter": getattr(info, "name", None), "method": __doc__}
    out["results"] = results
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2, default=str))
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
