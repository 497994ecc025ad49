"""Train-step timing inside the tab (webapp layer): the Scellis side of
bench/browser_train_step.py, the same models and method as its tf.js side.

One step = forward + MSE + backward + Adam on the worker's WebGPU device; ``steps``
steps then one loss readback, median of ``repeats`` blocks. ``first_step_ms`` runs
from the call to the first loss on the host (model build, uploads, shader compiles);
the page adds the Pyodide start-up it measured before the engine was ready.
"""

from __future__ import annotations

import random
import statistics
import time

from ..base.rng import Generator
from ..catalog.losses import MSELoss
from ..catalog.optim import Adam
from ..devices.base import get_device
from ..model.zoo import LSTMForecaster
from ..runtime.creation import tensor

CONFIGS = {
    "seed_lstm": {"batch": 32, "T": 5, "hidden": 8, "layers": 1, "lr": 0.01},
    "lstm2x64": {"batch": 64, "T": 32, "hidden": 64, "layers": 2, "lr": 1e-3},
}


def _data(cfg: dict) -> tuple[list, list]:
    r = random.Random(7)
    x = [[[r.uniform(-0.5, 0.5)] for _ in range(cfg["T"])] for _ in range(cfg["batch"])]
    y = [[r.uniform(-0.5, 0.5)] for _ in range(cfg["batch"])]
    return x, y


async def bench_train_step(
    model: str = "seed_lstm", steps: int = 20, repeats: int = 3, warmup: int = 2
) -> dict:
    """ms per training step of ``model`` (a key of CONFIGS) on this tab's WebGPU."""
    cfg = CONFIGS[model]
    t0 = time.perf_counter()
    dev = get_device("webgpu")
    net = LSTMForecaster(1, cfg["hidden"], cfg["layers"], 1, device=dev, gen=Generator(0, "init"))
    loss_fn, opt = MSELoss(), Adam(net, lr=cfg["lr"])
    x, y = _data(cfg)
    xt, yt = tensor(x, device=dev, dtype="f32"), tensor(y, device=dev, dtype="f32")

    def step():
        opt.zero_grad()
        loss = loss_fn(net(xt), yt)
        loss.backward()
        opt.step()
        return loss

    first = await step().read()
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(max(0, warmup - 1)):
        await step().read()
    blocks = []
    for _ in range(repeats):
        s = time.perf_counter()
        for _ in range(steps):
            loss = step()
        await loss.read()
        blocks.append((time.perf_counter() - s) / steps * 1e3)
    return {
        "impl": "scellis-webgpu",
        "ms_per_step": statistics.median(blocks),
        "first_step_ms": first_ms,
        "first_loss": first,
        "adapter": getattr(dev, "adapter_name", dev.name),
    }
