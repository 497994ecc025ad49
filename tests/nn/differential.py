"""Two training scripts written once for torch's API and run by torch and by scellis.

Each function takes the library module (``torch`` or ``scellis``) and its data
module (``torch.utils.data`` or ``scellis.data``), starts from the weights given
(a torch state dict, loaded by both through ``load_state_dict``) and returns the loss
of every step. Nothing in them knows which library runs them.
"""

from __future__ import annotations

import math


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 32), nn.GELU(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 1))  # fmt: skip


def regression_rows(n=64):
    xs = [[math.sin(0.37 * i), math.cos(0.11 * i), (i % 7) / 7.0 - 0.5] for i in range(n)]
    ys = [[x[0] * x[1] + 0.5 * x[2] ** 2 - 0.2] for x in xs]
    return xs, ys


def train_mlp(lib, data, state, epochs=3):
    model = mlp(lib)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    model.load_state_dict(state)  # after the optimizer: it must keep training them
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=6, gamma=0.5)
    xs, ys = regression_rows()
    loader = data.DataLoader(data.TensorDataset(lib.tensor(xs), lib.tensor(ys)), batch_size=16)
    losses = []
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
    return losses


def forecaster(lib, hidden=16):
    class Forecaster(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lib.nn.LSTM(1, hidden, num_layers=2, batch_first=True)
            self.head = lib.nn.Linear(hidden, 1)

        def forward(self, x):
            out, (h, c) = self.lstm(x)
            return self.head(out[:, -1])

    return Forecaster()


def series_windows(n=48, window=12):
    s = [math.sin(0.3 * t) + 0.3 * math.sin(0.05 * t * t / 10) for t in range(n + window)]
    xs = [[[v] for v in s[i : i + window]] for i in range(n)]
    ys = [[s[i + window]] for i in range(n)]
    return xs, ys


def train_forecaster(lib, data, state, epochs=3):
    model = forecaster(lib)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    model.load_state_dict(state)
    xs, ys = series_windows()
    loader = data.DataLoader(data.TensorDataset(lib.tensor(xs), lib.tensor(ys)), batch_size=12)
    losses = []
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def conv_forecaster(lib, channels=8):
    nn = lib.nn

    class ConvForecaster(nn.Module):
        def __init__(self):
            super().__init__()
            # no conv bias: batch norm cancels it, so its gradient is rounding noise that
            # Adam would scale up to full steps in a direction each library rounds apart
            self.conv = nn.Conv1d(1, channels, 3, padding=1, bias=False)
            self.norm = nn.BatchNorm1d(channels)
            self.pool = nn.MaxPool1d(2)
            self.gru = nn.GRU(channels, channels, batch_first=True, bidirectional=True)
            self.head = nn.Linear(2 * channels, 1)

        def forward(self, x):  # [B, T, 1]
            h = self.pool(self.norm(self.conv(x.transpose(1, 2))).relu())  # [B, C, T/2]
            out, _ = self.gru(h.transpose(1, 2))
            return self.head(out[:, -1])

    return ConvForecaster()


def train_conv_forecaster(lib, data, state, epochs=3):
    """Per-step training losses, then the loss of the whole set in eval mode (batch
    norm's running statistics)."""
    model = conv_forecaster(lib)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    model.load_state_dict(state)
    xs, ys = series_windows()
    loader = data.DataLoader(data.TensorDataset(lib.tensor(xs), lib.tensor(ys)), batch_size=12)
    losses = []
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    model.eval()
    losses.append(lib.nn.functional.mse_loss(model(lib.tensor(xs)), lib.tensor(ys)).item())
    return losses
