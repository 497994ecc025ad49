# A classifier trained on a split made with NumPy (a permutation from a seeded
# np.random.default_rng indexes the tensors and builds Subsets), rows assembled with
# torch.tensor from a list of arrays, NumPy scalars in the arithmetic (a class-balance
# weight from np.bincount), and evaluation as scikit-learn-free tutorials write it: a
# confusion matrix by index_put_(accumulate=True), per-class precision / recall / F1
# with clamp to avoid 0/0, macro averages, and np.asarray of the predictions.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Subset, TensorDataset

CLASSES = 3


def build():
    return nn.Sequential(nn.Linear(6, 12), nn.SiLU(), nn.Linear(12, CLASSES))


def confusion(pred, true):
    cm = torch.zeros(CLASSES, CLASSES)
    cm.index_put_((true, pred), torch.ones(len(true)), accumulate=True)
    return cm


def scores(cm):
    tp = cm.diag()
    precision = tp / cm.sum(0).clamp(min=1)
    recall = tp / cm.sum(1).clamp(min=1)
    f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-8)
    return [precision.mean().item(), recall.mean().item(), f1.mean().item()]


def train(model, data, steps):
    rows = [np.asarray(r, dtype=np.float32) for r in data["x"]]
    x = torch.tensor(rows)
    y = torch.from_numpy(data["y"])
    order = np.random.default_rng(0).permutation(len(rows))
    tr_idx, va_idx = order[:18], order[18:]
    counts = np.bincount(data["y"][tr_idx], minlength=CLASSES)
    weight = torch.tensor(counts.sum() / (CLASSES * np.maximum(counts, 1)), dtype=torch.float32)
    full = TensorDataset(x, y)
    train_loader = DataLoader(Subset(full, tr_idx), batch_size=6)
    opt = torch.optim.Adam(model.parameters(), lr=np.float32(0.02))
    losses = weight.tolist()
    for _ in range(steps):
        model.train()
        for xb, yb in train_loader:
            loss = F.cross_entropy(model(xb), yb, weight=weight) * np.float64(1.0)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = model(x[va_idx]).argmax(1)
            losses += scores(confusion(pred, y[va_idx]))
            losses.append(float((np.asarray(pred) == data["y"][va_idx]).mean()))
    with torch.no_grad():
        cm = confusion(model(x).argmax(1), y)
    return losses + cm.flatten().tolist()
