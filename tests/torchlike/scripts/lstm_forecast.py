# An LSTM forecaster: windows, Adam, clipping, early stopping, save and load of the best.
import torch
import torch.nn as nn


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=1, hidden_size=12, num_layers=2, batch_first=True)
        self.head = nn.Linear(12, 1)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1, :])


def build():
    return Forecaster()


def train(model, data, steps, path=None):
    series = torch.tensor(data["series"])
    win = 8
    xs = torch.stack([series[i : i + win] for i in range(len(series) - win)]).unsqueeze(-1)
    ys = series[win:].unsqueeze(-1)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    loss_fn = nn.MSELoss()
    best, patience, losses = float("inf"), 0, []
    for _ in range(steps):
        model.train()
        pred = model(xs[:24])
        loss = loss_fn(pred, ys[:24])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        model.eval()
        with torch.no_grad():
            val = loss_fn(model(xs[24:]), ys[24:]).item()
        losses += [loss.item(), val]
        if val < best:
            best, patience = val, 0
            torch.save(model.state_dict(), path)
        else:
            patience += 1
            if patience > 3:
                break
    model.load_state_dict(torch.load(path))
    with torch.no_grad():
        losses.append(loss_fn(model(xs[24:]), ys[24:]).item())
    return losses
