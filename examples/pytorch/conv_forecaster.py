"""A Conv1d + BatchNorm1d + MaxPool1d + bidirectional GRU forecaster written for torch's
API; the last value is the loss of the whole set in eval mode (batch norm's running
statistics).

Run it with Scellis (``python examples/pytorch/conv_forecaster.py``) or with PyTorch
(``... --torch``): only the import differs (see swap.py).
"""

from __future__ import annotations

from lstm_forecaster import windows
from swap import library, report


def build(lib, channels=8):
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


def train(lib, data, state, epochs=3, device="cpu"):
    """Per-step training losses, then the loss of the whole set in eval mode."""
    model = build(lib).to(device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    model.load_state_dict(state)
    xs, ys = windows()
    x_all, y_all = lib.tensor(xs, device=device), lib.tensor(ys, device=device)
    losses = []
    for _ in range(epochs):
        for xb, yb in data.DataLoader(data.TensorDataset(x_all, y_all), batch_size=12):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    model.eval()
    losses.append(lib.nn.functional.mse_loss(model(x_all), y_all).item())
    return losses


if __name__ == "__main__":
    lib, data, device, epochs = library()
    lib.manual_seed(0)
    report(train(lib, data, build(lib).state_dict(), epochs, device))
