# Curve fitting as optimisation tutorials write it: a small network fitted to a noisy
# wave with torch.optim.LBFGS and a closure (zero_grad, loss, backward, return loss),
# step(closure) returning the first loss of each call, then refined by Adam; the fit's
# residuals summarised (abs().max(), std, mean).
import torch
import torch.nn as nn


def build():
    return nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))


def train(model, data, steps):
    series = torch.from_numpy(data["series"])
    t = torch.linspace(-1.0, 1.0, len(series)).unsqueeze(1)
    target = series.unsqueeze(1) * 0.5
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5, history_size=4)
    losses = []

    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(t), target)
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(optimizer.step(closure).item())
    adam = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        adam.zero_grad()
        loss = nn.functional.mse_loss(model(t), target)
        loss.backward()
        adam.step()
        losses.append(loss.item())
    with torch.no_grad():
        residual = model(t) - target
        losses += [residual.abs().max().item(), residual.std().item(), residual.mean().item()]
    return losses
