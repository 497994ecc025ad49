"""Training-step time of the CIFAR-10 tutorial CNN (Conv2d, MaxPool2d, Linear; SGD with
momentum) in scellis beside torch, on 32x32 inputs.

Scellis' Conv2d is im2col (one strided slice per kernel tap) and one matmul, and its
pools stack the window taps; this measures what that composition costs against
torch's own kernels on the same machine. Each library runs ``--warmup`` steps, then
``--steps`` timed steps; a step is forward, cross entropy, backward, ``optimizer.step``
and ``loss.item()`` (which waits for the device). The median step is reported in ms.

    PYTHONPATH=src python3 bench/conv_step.py --device webgpu --out bench/out/conv_step.json

``--device reference`` times the NumPy device; torch runs on CUDA when it has a GPU,
else on its CPU. Read ``scellis_ms``, ``torch_ms`` and ``ratio`` (scellis / torch).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import scellis


def build(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.pool = nn.Conv2d(3, 6, 5), nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1, self.fc2, self.fc3 = (
                nn.Linear(400, 120),
                nn.Linear(120, 84),
                nn.Linear(84, 10),
            )

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = lib.flatten(x, 1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    return Net()


def time_steps(lib, model, x, y, warmup: int, steps: int) -> list[float]:
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="webgpu", choices=("webgpu", "reference"))
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((a.batch, 3, 32, 32)).astype(np.float32)
    ys = rng.integers(0, 10, a.batch)
    tdev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    theirs = build(torch).to(tdev)
    ours = build(scellis)
    ours.load_state_dict(theirs.state_dict())
    ours.to(a.device)
    t_ms = time_steps(torch, theirs, torch.from_numpy(xs).to(tdev), torch.from_numpy(ys).to(tdev),
                      a.warmup, a.steps)  # fmt: skip
    s_ms = time_steps(scellis, ours, scellis.tensor(xs, device=a.device),
                      scellis.tensor(ys.astype(np.int32), dtype="i32", device=a.device),
                      a.warmup, a.steps)  # fmt: skip
    row = {"batch": a.batch, "scellis_device": a.device, "torch_device": tdev,
           "scellis_ms": statistics.median(s_ms), "torch_ms": statistics.median(t_ms)}  # fmt: skip
    row["ratio"] = row["scellis_ms"] / row["torch_ms"]
    print(json.dumps(row, indent=1))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
