"""A two-layer LSTM forecaster written for torch's API (Adam, MSE).

Run it with Scellis (``python examples/pytorch/lstm_forecaster.py``) or with PyTorch
(``... --torch``): only the import differs (see swap.py).
"""

from __future__ import annotations

import math

from swap import library, report


def build(lib, hidden=16):
    class Forecaster(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lib.nn.LSTM(1, hidden, num_layers=2, batch_first=True)
            self.head = lib.nn.Linear(hidden, 1)

        def forward(self, x):
            out, (h, c) = self.lstm(x)
            return self.head(out[:, -1])

    return Forecaster()


def windows(n=48, window=12):
    s = [math.sin(0.3 * t) + 0.3 * math.sin(0.05 * t * t / 10) for t in range(n + window)]
    xs = [[[v] for v in s[i : i + window]] for i in range(n)]
    ys = [[s[i + window]] for i in range(n)]
    return xs, ys


def train(lib, data, state, epochs=3, device="cpu"):
    """The loss of every step, from the weights ``state``."""
    model = build(lib).to(device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    model.load_state_dict(state)
    xs, ys = windows()
    dataset = data.TensorDataset(lib.tensor(xs, device=device), lib.tensor(ys, device=device))
    losses = []
    for _ in range(epochs):
        for xb, yb in data.DataLoader(dataset, batch_size=12):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


if __name__ == "__main__":
    lib, data, device, epochs = library()
    lib.manual_seed(0)
    report(train(lib, data, build(lib).state_dict(), epochs, device))
