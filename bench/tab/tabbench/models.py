"""The models the tab's train-step benchmark builds (bench harness, not shipped), by name.

Each entry is a config dict with a ``kind``: ``lstm`` (LSTMForecaster, MSE on a
regression target) or ``tf`` (CharTransformer: pre-norm causal decoder, GELU 4x MLP,
learned positions, untied head, cross-entropy on next-token ids). The tf.js peer page
(bench/browser/) builds the same shapes from the same numbers, so both sides train
models with equal parameter counts. ``shape`` overrides scale a model down for a smoke
check on a CPU WebGPU adapter without changing its structure.
"""

from __future__ import annotations

import random

from scellis.base.errors import ScellisError
from scellis.base.rng import Generator
from scellis.catalog.losses import CrossEntropyLoss, MSELoss
from scellis.model.zoo import CharTransformer, LSTMForecaster
from scellis.runtime.creation import tensor

LSTM, TF = "lstm", "tf"
CONFIGS = {
    "seed_lstm": {"kind": LSTM, "batch": 32, "T": 5, "hidden": 8, "layers": 1, "lr": 0.01},
    "lstm2x64": {"kind": LSTM, "batch": 64, "T": 32, "hidden": 64, "layers": 2, "lr": 1e-3},
    "char_tf": {"kind": TF, "batch": 32, "T": 64, "d": 128, "layers": 2, "heads": 4,
                "vocab": 96, "lr": 1e-3},
    "tf_d384": {"kind": TF, "batch": 32, "T": 256, "d": 384, "layers": 6, "heads": 6,
                "vocab": 96, "lr": 1e-3},
}  # fmt: skip
SIZE_KEYS = ("batch", "T", "hidden", "layers", "d", "heads", "vocab")


def config(model: str, shape: dict | None = None) -> dict:
    """``model``'s config with ``shape``'s sizes put in (each a whole number >= 1)."""
    if model not in CONFIGS:
        raise ScellisError(
            f"bench_train_step: model must be one of {sorted(CONFIGS)}, got {model!r}"
        )
    cfg = dict(CONFIGS[model])
    for key, n in (shape or {}).items():
        if key not in cfg or key not in SIZE_KEYS:
            raise ScellisError(f"bench_train_step: {model} has no size {key!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ScellisError(f"bench_train_step: {key} must be a whole number >= 1, got {n!r}")
        cfg[key] = n
    if cfg["kind"] == TF and cfg["d"] % cfg["heads"]:
        raise ScellisError(f"bench_train_step: d {cfg['d']} is not a multiple of heads")
    return cfg


def build(cfg: dict, dev, attention: str = "auto"):
    """(model, loss) on ``dev``, initialised from the ``init`` stream of seed 0; a
    Transformer takes the ``attention`` path (auto, naive or flash)."""
    gen = Generator(0, "init")
    if cfg["kind"] == LSTM:
        net = LSTMForecaster(1, cfg["hidden"], cfg["layers"], 1, device=dev, gen=gen)
        return net, MSELoss()
    net = CharTransformer(cfg["vocab"], cfg["d"], cfg["heads"], cfg["layers"], cfg["T"],
                          device=dev, gen=gen, attention=attention)  # fmt: skip
    return net, CrossEntropyLoss()


def batch(cfg: dict, dev) -> tuple:
    """One fixed batch (inputs, targets) on ``dev``, the same every call."""
    r = random.Random(7)
    B, T = cfg["batch"], cfg["T"]
    if cfg["kind"] == LSTM:
        x = [[[r.uniform(-0.5, 0.5)] for _ in range(T)] for _ in range(B)]
        y = [[r.uniform(-0.5, 0.5)] for _ in range(B)]
        return tensor(x, device=dev, dtype="f32"), tensor(y, device=dev, dtype="f32")
    ids = [[r.randrange(cfg["vocab"]) for _ in range(T + 1)] for _ in range(B)]
    x = tensor([row[:-1] for row in ids], device=dev, dtype="i32")
    y = tensor([row[1:] for row in ids], device=dev, dtype="i32")
    return x, y


def parameter_count(net) -> int:
    total = 0
    for p in net.parameters():
        n = 1
        for s in p.shape:
            n *= s
        total += n
    return total
