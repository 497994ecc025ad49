# Gradient accumulation: each optimizer step sums the gradients of k micro-batches with
# the loss scaled by 1/k, zero_grad(set_to_none=True) leaves no gradients behind, and
# the norm clip_grad_norm_ returns (before clipping) is logged beside the loss.
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


def build():
    return Net()


def train(model, data, steps, accum=3):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    micro = torch.split(torch.arange(len(x)), 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, amsgrad=True)
    criterion = nn.CrossEntropyLoss(reduction="mean")
    losses = []
    opt.zero_grad(set_to_none=True)
    for step in range(steps * accum):
        idx = micro[step % len(micro)]
        loss = criterion(model(x[idx]), y[idx]) / accum
        loss.backward()
        if (step + 1) % accum == 0:
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
            opt.step()
            opt.zero_grad(set_to_none=True)
            assert all(p.grad is None for p in model.parameters())
            losses += [loss.item() * accum, float(norm)]
    return losses
