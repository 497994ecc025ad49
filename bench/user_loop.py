"""Milliseconds per step of a training loop written torch-style, beside ``scellis train``'s
replayed step and torch CUDA, in one run.

The user loop is what a PyTorch user writes (Adam, the model's loss):

    def step(x, y):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

run as written (``eager``) and as ``scellis.compile(step)`` (``compiled``: recorded once,
then replayed), each followed by ``loss.item()`` every ``--steps`` steps. ``train`` is
the training loop's own replayed step (bench/step_time.py's ``replay``, what ``scellis
train`` runs) on the same model; torch is bench/train_step.py's eager CUDA step (TF32
off). Models: bench/step_time.py's (``--models``). Method: ``--warmup`` steps, then
``--repeats`` blocks of ``--steps`` steps over 4 batches on the device, one loss readback
ending each block; the median ms per step. ``compiled == eager``: the first losses of
the two user loops agree bit for bit.

    PYTHONPATH=src python3 bench/user_loop.py --out bench/out/user_loop.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import step_time as ST  # noqa: E402  (bench/step_time.py: models, batches, train and torch)
from tabbench import models as bench_models  # noqa: E402

import scellis as sc  # noqa: E402


def user_run(cfg, dev, compiled: bool, a) -> dict:
    model, loss_fn = bench_models.build(cfg, dev, "auto")
    opt = sc.optim.Adam(model.parameters(), lr=cfg["lr"])
    dtypes = ("f32", "f32") if cfg["kind"] == bench_models.LSTM else ("i32", "i32")
    batches = [
        (sc.tensor(x, device=dev, dtype=dtypes[0]), sc.tensor(y, device=dev, dtype=dtypes[1]))
        for x, y in ST._batches(cfg)
    ]

    def step(x, y):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    fn = sc.compile(step) if compiled else step
    model.train()
    k, first = 0, []
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for _ in range(a.warmup):
            first.append(fn(*batches[k % 4]).item())
            k += 1
        blocks = []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            for _ in range(a.steps):
                loss = fn(*batches[k % 4])
                k += 1
            loss.item()
            blocks.append((time.perf_counter() - t0) / a.steps * 1e3)
    notes = sorted({str(w.message) for w in said})
    dispatches = None
    if compiled and fn.sr is not None:
        dispatches = fn.sr.schedule.dispatches if fn.sr.schedule else None
        fn.sr.close()
    return {"ms": statistics.median(blocks), "first_losses": first, "notes": notes,
            "replayed": getattr(fn, "replayed", None),
            "dispatches_per_step": dispatches}  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="webgpu")
    p.add_argument("--models", default="lstm2x64,char_tf,tf_d384")
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--out", default="bench/out/user_loop.json")
    a = p.parse_args(argv)
    a.torch_cpu = False
    dev = sc.devices.get_device(a.device)
    tdev = ST._torch_device(a)
    adapter = getattr(getattr(dev, "info", None), "name", a.device)
    print(f"device {a.device} ({adapter}), torch on {tdev}")
    head = ("model", "eager", "compiled", "train", "torch", "comp/train", "comp/torch")
    print(" ".join(f"{h:>10}" for h in head) + "  compiled==eager")
    results = {}
    for name in a.models.split(","):
        cfg = ST.CONFIGS[name]
        peer = ST.torch_run(cfg, tdev, a) if tdev else None
        eager = user_run(cfg, dev, False, a)
        comp = user_run(cfg, dev, True, a)
        train = ST.scellis_run(cfg, dev, True, "auto", None, a)
        same = eager["first_losses"] == comp["first_losses"]
        ratios = (comp["ms"] / train["ms"], comp["ms"] / peer["ms"] if peer else None)
        cells = [eager["ms"], comp["ms"], train["ms"], peer["ms"] if peer else None, *ratios]
        print(f"{name:>10} " + " ".join(f"{c:10.2f}" if c is not None else f"{'-':>10}"
                                        for c in cells) + f"  {same}")  # fmt: skip
        results[name] = {"eager": eager, "compiled": comp, "train_replay": train, "torch": peer,
                         "compiled_over_train": ratios[0], "compiled_over_torch": ratios[1],
                         "compiled_equals_eager": same}  # fmt: skip
    out = {"device": a.device, "adapter": adapter, "torch_device": tdev, "method": __doc__,
           "results": results}  # fmt: skip
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2, default=str))
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
