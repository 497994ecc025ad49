"""Milliseconds per training step: scellis (reference, WebGPU) vs PyTorch CPU (and CUDA).

Three models, Adam, one step = forward + loss + backward + optimizer update:
  seed_lstm   LSTM(8) on [32, 5, 1] windows, Linear to 1, MSE, Adam 0.01 (the seed's example)
  lstm2x64    2-layer LSTM(64) on [64, 32, 1], Linear to 1, MSE
  char_tf     char Transformer, batch 32, context 64, d_model 128, 2 layers, 4 heads, vocab 96
Method: ``--warmup`` untimed steps, then ``--steps`` timed steps; the clock stops after
the last step's loss is read back (one readback per timed block, as the training loop
does at log points), so queued GPU work is included. Reported: median over
``--repeats`` blocks, in ms per step. Same inputs and shapes for every backend.
"""

from __future__ import annotations

import argparse
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
from scellis.catalog.losses import CrossEntropyLoss, MSELoss  # noqa: E402
from scellis.catalog.optim import Adam  # noqa: E402
from scellis.model import CharTransformer, LSTMForecaster  # noqa: E402

CONFIGS = {
    "seed_lstm": {"kind": "lstm", "batch": 32, "T": 5, "hidden": 8, "layers": 1, "lr": 0.01},
    "lstm2x64": {"kind": "lstm", "batch": 64, "T": 32, "hidden": 64, "layers": 2, "lr": 1e-3},
    "char_tf": {
        "kind": "tf",
        "batch": 32,
        "T": 64,
        "d": 128,
        "layers": 2,
        "heads": 4,
        "vocab": 96,
        "lr": 1e-3,
    },
}


def _data(cfg, rng):
    if cfg["kind"] == "lstm":
        x = rng.standard_normal((cfg["batch"], cfg["T"], 1)).astype(np.float32)
        return x, rng.standard_normal((cfg["batch"], 1)).astype(np.float32)
    ids = rng.integers(0, cfg["vocab"], (cfg["batch"], cfg["T"] + 1)).astype(np.int32)
    return ids[:, :-1], ids[:, 1:]


def scellis_step(cfg, device):
    dev = sc.devices.get_device(device)
    rng = np.random.default_rng(0)
    x, y = _data(cfg, rng)
    gen = sc.rng.Generator(0, "init")
    if cfg["kind"] == "lstm":
        model = LSTMForecaster(1, cfg["hidden"], cfg["layers"], 1, device=dev, gen=gen)
        loss_fn = MSELoss()
    else:
        model = CharTransformer(
            cfg["vocab"], cfg["d"], cfg["heads"], cfg["layers"], cfg["T"], device=dev, gen=gen
        )
        loss_fn = CrossEntropyLoss()
    opt = Adam(model, lr=cfg["lr"])
    xt, yt = sc.tensor(x, device=dev), sc.tensor(y, device=dev)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    return step, lambda loss: loss.item()


def torch_parts(cfg, device, capturable: bool = False):
    """The torch side of a row: (model, forward, loss function, Adam, x, y) on ``device``.
    ``capturable`` keeps Adam's step count on the GPU so a CUDA graph can capture it."""
    import torch

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x, y = _data(cfg, rng)
    if cfg["kind"] == "lstm":
        lstm = torch.nn.LSTM(1, cfg["hidden"], cfg["layers"], batch_first=True)
        head = torch.nn.Linear(cfg["hidden"], 1)
        model = torch.nn.ModuleDict({"lstm": lstm, "head": head}).to(device)
        fwd = lambda xb: model["head"](model["lstm"](xb)[0][:, -1])  # noqa: E731
        loss_fn = torch.nn.MSELoss()
    else:
        d, T = cfg["d"], cfg["T"]
        layer = torch.nn.TransformerEncoderLayer(
            d, cfg["heads"], 4 * d, 0.0, "gelu", batch_first=True, norm_first=True
        )
        model = torch.nn.ModuleDict(
            {
                "tok": torch.nn.Embedding(cfg["vocab"], d),
                "pos": torch.nn.Embedding(T, d),
                "body": torch.nn.TransformerEncoder(
                    layer, cfg["layers"], enable_nested_tensor=False
                ),
                "ln": torch.nn.LayerNorm(d),
                "head": torch.nn.Linear(d, cfg["vocab"], bias=False),
            }
        ).to(device)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(T, device=device)
        pos = torch.arange(T, device=device)

        def fwd(xb):
            h = model["tok"](xb) + model["pos"](pos)
            h = model["ln"](model["body"](h, mask=mask, is_causal=True))
            return model["head"](h).reshape(-1, cfg["vocab"])

        loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"], capturable=capturable)
    xt = torch.tensor(x, device=device)
    yt = torch.tensor(y, device=device)
    if cfg["kind"] == "tf":
        xt, yt = xt.long(), yt.long().reshape(-1)
    return model, fwd, loss_fn, opt, xt, yt


def torch_step(cfg, device):
    _, fwd, loss_fn, opt, xt, yt = torch_parts(cfg, device)

    def step():
        opt.zero_grad()
        loss = loss_fn(fwd(xt), yt)
        loss.backward()
        opt.step()
        return loss

    return step, lambda loss: loss.item()


def measure(make, cfg, device, warmup, steps, repeats):
    step, sync = make(cfg, device)
    for _ in range(warmup):
        sync(step())
    blocks = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            loss = step()
        sync(loss)
        blocks.append((time.perf_counter() - t0) / steps * 1e3)
    return statistics.median(blocks)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(CONFIGS))
    p.add_argument("--backends", default="reference,webgpu,torch_cpu,torch_cuda")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="bench/out/train_step.json")
    a = p.parse_args(argv)
    backends = a.backends.split(",")
    if "torch_cuda" in backends:
        import torch

        if not torch.cuda.is_available():
            backends.remove("torch_cuda")
    runners = {
        "reference": (scellis_step, "reference"),
        "webgpu": (scellis_step, "webgpu"),
        "torch_cpu": (torch_step, "cpu"),
        "torch_cuda": (torch_step, "cuda"),
    }
    results = {}
    gpu = sc.devices.get_device("webgpu") if "webgpu" in backends else None
    print("adapter:", gpu.info.name if gpu else "-")
    print(f"{'model':>10} " + " ".join(f"{b:>12}" for b in backends) + "   (ms per step)")
    for name in a.models.split(","):
        cfg = CONFIGS[name]
        row = {}
        for b in backends:
            make, dev = runners[b]
            row[b] = measure(make, cfg, dev, a.warmup, a.steps, a.repeats)
        if gpu is not None:
            row["webgpu_dispatches_per_step"] = _dispatches(cfg, gpu)
        results[name] = row
        print(f"{name:>10} " + " ".join(f"{row[b]:12.2f}" for b in backends))
    out = {"adapter": gpu.info.name if gpu else None, "method": __doc__, "results": results}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2))
    print("wrote", a.out)
    return 0


def _dispatches(cfg, gpu) -> int:
    step, sync = scellis_step(cfg, gpu)
    sync(step())
    before = gpu.stats["dispatches"]
    sync(step())
    return gpu.stats["dispatches"] - before


if __name__ == "__main__":
    sys.exit(main())
