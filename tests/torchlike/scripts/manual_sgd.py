# Plain gradient descent written by hand: in-place updates inside no_grad.
import torch
import torch.nn.functional as F
from torch import nn


def build():
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))


def train(model, data, steps):
    x = torch.tensor(data["x"][:, :5])
    y = torch.tensor(data["t"]).unsqueeze(1)
    lr, losses = 0.1, []
    for _ in range(steps):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
                p.grad.zero_()
        losses.append(loss.item())
    return losses
