# An MLP classifier as a tutorial writes it: DataLoader, AdamW, two schedulers, clipping.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(6, 16),
            nn.ReLU(),
            nn.Linear(16, 16),
            nn.GELU(),
            nn.Dropout(0.0),
            nn.Linear(16, 3),
        )

    def forward(self, x):
        return self.net(x)


def build():
    return MLP()


def train(model, data, steps):
    x = torch.tensor(data["x"], dtype=torch.float32)
    y = torch.tensor(data["y"], dtype=torch.long)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05)
    decay = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)
    steps_down = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]), label_smoothing=0.05)
    losses, correct = [], 0
    model.train()
    while len(losses) < steps:
        for xb, yb in loader:
            logits = model(xb)
            loss = loss_fn(logits, yb)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            opt.step()
            decay.step()
            steps_down.step()
            losses.append(loss.item())
            _, pred = logits.max(dim=1)
            correct += (pred == yb).sum().item()
            if len(losses) == steps:
                break
    model.eval()
    with torch.no_grad():
        losses.append(loss_fn(model(x), y).item())
    return losses
