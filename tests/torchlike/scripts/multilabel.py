# A multi-label classifier: BCEWithLogitsLoss with a positive weight per label, sigmoid
# thresholds, accuracies from bool tensors, BatchNorm switching with model.train() /
# model.eval(), evaluation under the torch.no_grad() decorator, and predictions gathered
# batch by batch into a tensor that starts as torch.tensor([]).
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU(), nn.Linear(12, 3))

    def forward(self, x):
        return self.net(x)


def build():
    return Tagger()


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    probs = torch.sigmoid(model(x))
    preds = probs > 0.5
    truth = y.bool()
    per_label = (preds == truth).float().mean(dim=0)
    exact = preds.eq(truth).all(dim=1).float().mean()
    tp = (preds & truth).sum().item()
    fp = (preds & ~truth).sum().item()
    gathered = torch.tensor([])
    for start in range(0, len(x), 10):
        gathered = torch.cat([gathered, model(x[start : start + 10]).argmax(1)])
    top = float(f"{(gathered == y.argmax(1)).float().mean():.4f}")
    return [per_label.mean().item(), exact.item(), float(tp), float(fp), probs.max().item(), top]


def train(model, data, steps):
    x = torch.from_numpy(data["x"])
    y = torch.stack([x[:, 0] > 0, x[:, 1] + x[:, 2] > 0.5, x[:, 3] < -0.3], dim=1).float()
    y[torch.arange(len(y)), x[:, 4:].abs().argmax(1)] = 1.0  # one more tag per row
    pos_weight = (len(y) - y.sum(0)) / y.sum(0).clamp(min=1)
    criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.7)
    losses = []
    for step in range(steps):
        model.train()
        xb, yb = (
            x[(step % 2) * 12 : (step % 2) * 12 + 12],
            y[(step % 2) * 12 : (step % 2) * 12 + 12],
        )
        loss = criterion(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % 3 == 2:
            losses += evaluate(model, x, y)
    return losses + evaluate(model, x, y)
