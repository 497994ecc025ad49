"""Milliseconds per training step at the sizes people train: Scellis (eager and replayed)
beside PyTorch CUDA eager, f32, in one run.

Models (Adam, one step = forward + loss + backward + update):
  seed_lstm   LSTM(8) on [32, 5, 1], Linear to 1, MSE (the seed's example)
  lstm2x64    2-layer LSTM(64) on [64, 32, 1], Linear to 1, MSE
  char_tf     decoder Transformer d128, 2 layers, 4 heads, context 64, batch 32, vocab 96
  lstm2x256   2-layer LSTM(256) on [128, 64, 1], Linear to 1, MSE
  tf_d384     decoder Transformer d384, 6 layers, 6 heads, context 256, batch 32, vocab 96

Scellis runs the training loop's own step (train/loop.py: forward under the precision
policy, loss, backward, finite-flag guard, gated update), eager (``replay=False``) and
replayed (``replay=True``, the default of ``scellis train``); ``--precision
f32,mixed_f16`` times each row in both and prints f32's ms over mixed's per mode (above 1:
mixed is faster) and the gap between their first losses. The Transformer rows run
once per attention path asked for (``--attention auto,naive,flash``). torch runs the same
shapes as in bench/train_step.py (``nn.LSTM``; ``nn.TransformerEncoderLayer`` pre-norm,
GELU, 4x MLP), eager, TF32 off, so both sides do true f32 arithmetic. ``--peers`` adds
torch's faster columns on CUDA (bench/torch_peers.py): ``graph``, the whole step captured
as one CUDA graph with capturable Adam (what a replayed step is), and ``compile``, the
step under ``torch.compile``.

Method: ``--warmup`` steps (compiles, pool fill, the replay's recording), then
``--repeats`` blocks of ``--steps`` steps cycling over 4 batches already on the device;
a block ends with one loss readback, so queued GPU work is inside it. Reported: median
ms per step, and each side's first losses (eager vs replay must agree bit for bit).

    PYTHONPATH=src python3 bench/step_time.py --peers eager,graph,compile \
        --out bench/out/step_time.json
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
sys.path.insert(0, str(Path(__file__).resolve().parent / "tab"))  # tabbench

from tabbench import models as bench_models  # noqa: E402
from tabbench.models import LSTM, TF  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.catalog.optim import Adam  # noqa: E402
from scellis.devices.webgpu.kernels import matmul as matmul_kernels  # noqa: E402
from scellis.train.fit_config import FitConfig  # noqa: E402
from scellis.train.loop import _Run  # noqa: E402
from scellis.train.precision import (  # noqa: E402
    MIXED_F16_LOSS_TOLERANCE,
    POLICIES,
    losses_follow_f32,
)
from scellis.train.state import TrainState  # noqa: E402

# the tab benchmark's models (the same numbers as the browser benches), and a larger LSTM
CONFIGS = {
    **bench_models.CONFIGS,
    "lstm2x256": {"kind": LSTM, "batch": 128, "T": 64, "hidden": 256, "layers": 2, "lr": 1e-3},
}


def _batches(cfg: dict, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(4):
        if cfg["kind"] == LSTM:
            x = rng.standard_normal((cfg["batch"], cfg["T"], 1)).astype(np.float32)
            out.append((x, rng.standard_normal((cfg["batch"], 1)).astype(np.float32)))
        else:
            ids = rng.integers(0, cfg["vocab"], (cfg["batch"], cfg["T"] + 1)).astype(np.int32)
            out.append((ids[:, :-1], ids[:, 1:]))
    return out


def _opts(replay: bool, precision: str, tier: str = "debug") -> FitConfig:
    if precision == "mixed_f16":  # a first scale the warm-up steps do not overflow, so
        # no step is skipped and the first losses compare with f32's step by step
        precision = {"policy": "mixed_f16", "init_scale": 256.0}
    return FitConfig(
        epochs=1, determinism_tier=tier, val_data=None, eval_every=None,
        log_every=10**9, grad_clip=None, precision=precision, early_stopping=None,
        skip_nonfinite=True, replay=replay, plateau_metric="loss",
    )  # fmt: skip


def scellis_run(cfg, dev, replay, attention, precision, a, tier: str = "debug") -> dict:
    model, loss = bench_models.build(cfg, dev, attention)
    dtypes = ("f32", "f32") if cfg["kind"] == LSTM else ("i32", "i32")
    batches = [
        (sc.tensor(x, device=dev, dtype=dtypes[0]), sc.tensor(y, device=dev, dtype=dtypes[1]))
        for x, y in _batches(cfg)
    ]
    state = TrainState(model, Adam(model, lr=cfg["lr"]))
    run = _Run(state, loss, None, _opts(replay, precision, tier))
    model.train()
    k, first = 0, []
    for _ in range(a.warmup):
        run.step(*batches[k % 4])
        k += 1
        first.append(asyncio.run(run.log())["loss"])
    blocks = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            run.step(*batches[k % 4])
            k += 1
        asyncio.run(run.log())
        blocks.append((time.perf_counter() - t0) / a.steps * 1e3)
    note = run.replay.record() if run.replay is not None else None
    if run.replay is not None:
        run.replay.close()
    return {"ms": statistics.median(blocks), "first_losses": first, "replay": note}


def torch_run(cfg, device, a, peer: str = "eager") -> dict:
    """One torch column: ``eager`` (bench/train_step.py's models), or ``graph`` / ``compile``
    (bench/torch_peers.py). A peer that cannot build on this machine reports its error."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from torch_peers import PEERS
    from train_step import torch_step  # bench/train_step.py: the same torch models

    try:
        step, sync = (torch_step if peer == "eager" else PEERS[peer])(cfg, device)
        first = [sync(step()) for _ in range(a.warmup)]
    except Exception as e:  # noqa: BLE001 - a peer missing on this machine is a result too
        return {"ms": None, "error": f"{type(e).__name__}: {str(e)[:200]}"}
    blocks = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        sync(loss)
        blocks.append((time.perf_counter() - t0) / a.steps * 1e3)
    return {"ms": statistics.median(blocks), "first_losses": first}


def _torch_device(a) -> str | None:
    if a.no_torch:
        return None
    try:
        import torch
    except ImportError:
        return None
    return "cuda" if torch.cuda.is_available() else ("cpu" if a.torch_cpu else None)


def _ms(peer: dict | None) -> float | None:
    return peer["ms"] if peer else None


def _cell(v: float | None) -> str:
    return f"{v:10.2f}" if v is not None else f"{'-':>10}"


def _key(name: str, path: str, prec: str, precisions: list[str]) -> str:
    """A result's key: ``model/path``, with ``/precision`` when the run has several."""
    return f"{name}/{path}" + (f"/{prec}" if len(precisions) > 1 else "")


def _speedup(rows: dict) -> dict:
    """f32 ms over mixed_f16 ms per mode, printed under the pair (above 1: f16 faster),
    and whether the mixed run's first losses follow f32's (``MIXED_F16_LOSS_TOLERANCE``)."""
    ratio = {m: rows["f32"][m]["ms"] / rows["mixed_f16"][m]["ms"] for m in ("eager", "replay")}
    mixed, f32 = (rows[p]["replay"]["first_losses"] for p in ("mixed_f16", "f32"))
    off = losses_follow_f32(mixed, f32)
    gap = max((abs(m - f) / abs(f) for m, f in zip(mixed, f32) if m and f), default=None)
    told = f"loss gap {gap:.1e} (rtol {MIXED_F16_LOSS_TOLERANCE['rtol']:g})" if gap else ""
    print(f"{'':>10} {'':>7} {'f32/mixed':>9} {ratio['eager']:10.2f} {ratio['replay']:10.2f}"
          f"  {told}{'  OUTSIDE: ' + '; '.join(off) if off else ''}")  # fmt: skip
    return {**ratio, "first_loss_rel_gap": gap, "losses_outside_tolerance": off}


def _row(name: str, label: str, prec: str, eager: dict, rep: dict, peers: dict) -> dict:
    """One printed line: Scellis eager and replayed beside each torch column, and the
    replayed step's ratio to each (under 1 means Scellis is faster)."""
    same = eager["first_losses"] == rep["first_losses"]
    ratios = {k: (rep["ms"] / _ms(v) if _ms(v) else None) for k, v in peers.items()}
    cells = "".join(_cell(_ms(v)) for v in peers.values())
    shown = "".join(f"{'-' if r is None else f'{r:.2f}':>9}" for r in ratios.values())
    print(f"{name:>10} {label:>7} {prec:>9} {eager['ms']:10.2f} {rep['ms']:10.2f}{cells}{shown}"
          f"  eager==replay {same}")  # fmt: skip
    return {"eager": eager, "replay": rep, "torch": peers.get("eager"), "torch_peers": peers,
            "replay_over_torch": ratios.get("eager"), "replay_over": ratios,
            "eager_equals_replay": same}  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="webgpu")
    p.add_argument("--models", default=",".join(CONFIGS))
    p.add_argument("--attention", default="auto,naive", help="paths for the Transformer rows")
    p.add_argument(
        "--precision",
        default="f32",
        help="f32, mixed_f16, or both (f32,mixed_f16): each row in each, then f32 / mixed",
    )
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--modes", default="eager,replay", help="Scellis modes to time")
    p.add_argument(
        "--tiers",
        default="debug",
        help="determinism tiers to time Scellis under (debug,prod,fast): each row in each",
    )
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--torch-cpu", action="store_true", help="torch on the CPU when no CUDA")
    p.add_argument("--peers", default="eager", help="torch columns: eager,graph,compile")
    p.add_argument(
        "--f32-math",
        action="store_true",
        help="mixed_f16 matmuls on prod/fast keep f32 products (matmul.HALF_MATH off)",
    )
    p.add_argument("--out", default="bench/out/step_time.json")
    a = p.parse_args(argv)
    if a.f32_math:
        matmul_kernels.HALF_MATH = False
    precisions = a.precision.split(",")
    if any(x not in POLICIES for x in precisions) or len(set(precisions)) != len(precisions):
        p.error(f"--precision takes {', '.join(POLICIES)} or both, not {a.precision!r}")
    dev = sc.devices.get_device(a.device)
    tdev = _torch_device(a)
    adapter = getattr(getattr(dev, "info", None), "name", a.device)
    print(f"device {a.device} ({adapter}), torch on {tdev}, precision {a.precision}")
    peers = a.peers.split(",") if tdev else []
    if tdev != "cuda":  # a CUDA graph needs CUDA; compile alone would time the CPU
        peers = [k for k in peers if k == "eager"]
    heads = "".join(f"{'t-' + k:>10}" for k in peers) + "".join(f"{'/' + k:>9}" for k in peers)
    print(f"{'model':>10} {'attn':>7} {'prec':>9} {'eager ms':>10} {'replay ms':>10}{heads}")
    results = {}
    for name in a.models.split(","):
        cfg = CONFIGS[name]
        peer = {k: torch_run(cfg, tdev, a, k) for k in peers}
        paths = a.attention.split(",") if cfg["kind"] == TF else ["-"]
        for path, tier in ((p_, t_) for p_ in paths for t_ in a.tiers.split(",")):
            label = path if tier == "debug" else f"{path}:{tier}"
            rows = {}
            for prec in precisions:
                eager = rep = None
                if "eager" in a.modes:
                    eager = scellis_run(cfg, dev, False, path, prec, a, tier)
                if "replay" in a.modes:
                    rep = scellis_run(cfg, dev, True, path, prec, a, tier)
                eager, rep = eager or rep, rep or eager
                rows[prec] = _row(name, label, prec, eager, rep, peer)
                results[_key(name, label, prec, precisions)] = rows[prec]
            if len(rows) == 2:
                results[f"{name}/{label}/f32_over_mixed_f16"] = _speedup(rows)
    out = {"device": a.device, "adapter": adapter, "torch_device": tdev,
           "precision": precisions, "method": __doc__, "results": results}  # fmt: skip
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2, default=str))
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
