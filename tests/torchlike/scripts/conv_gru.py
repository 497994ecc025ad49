# A Conv1d / BatchNorm / GRU sequence classifier.
import torch
import torch.nn as nn


class ConvGRU(nn.Module):
    def __init__(self):
        super().__init__()
        # no bias before BatchNorm: its gradient is rounding noise, which RMSprop would
        # scale up to full-size steps (in either library, differently)
        self.conv = nn.Conv1d(2, 8, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm1d(8)
        self.gru = nn.GRU(8, 12, batch_first=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):  # x: [B, C, T]
        h = torch.relu(self.bn(self.conv(x)))
        out, last = self.gru(h.permute(0, 2, 1))
        return self.fc(last[-1])


def build():
    return ConvGRU()


def train(model, data, steps):
    x = torch.tensor(data["wave"])
    y = torch.tensor(data["label"]).long()
    opt = torch.optim.RMSprop(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        model.train()
        loss = nn.CrossEntropyLoss()(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        values, indices = model(x).max(dim=1)
        losses += [values.sum().item(), float((indices == y).sum().item())]
    return losses
