"""An MLP regression written for torch's API: AdamW, StepLR, gradient clipping.

Run it with Scellis (``python examples/pytorch/mlp_regression.py``) or with PyTorch
(``... --torch``): only the import differs (see swap.py).
"""

from __future__ import annotations

import math

from swap import library, report


def build(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 32), nn.GELU(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 1))  # fmt: skip


def rows(n=64):
    xs = [[math.sin(0.37 * i), math.cos(0.11 * i), (i % 7) / 7.0 - 0.5] for i in range(n)]
    ys = [[x[0] * x[1] + 0.5 * x[2] ** 2 - 0.2] for x in xs]
    return xs, ys


def train(lib, data, state, epochs=3, device="cpu"):
    """The loss of every step, from the weights ``state``."""
    model = build(lib).to(device)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    model.load_state_dict(state)  # after the optimizer: it must keep training them
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=6, gamma=0.5)
    xs, ys = rows()
    dataset = data.TensorDataset(lib.tensor(xs, device=device), lib.tensor(ys, device=device))
    losses = []
    for _ in range(epochs):
        for xb, yb in data.DataLoader(dataset, batch_size=16):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
    return losses


if __name__ == "__main__":
    lib, data, device, epochs = library()
    lib.manual_seed(0)
    report(train(lib, data, build(lib).state_dict(), epochs, device))
