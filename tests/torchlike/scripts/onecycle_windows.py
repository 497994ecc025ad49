# A time-series regressor: sliding windows made with unfold and with stack of slices,
# functional losses (smooth L1, Huber, MSE, L1), SGD with momentum driven by OneCycleLR
# (cycled momentum too), and the schedule's learning rate read back every step.
import torch
import torch.nn as nn
import torch.nn.functional as F


def build():
    return nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 2))


def windows(series, win):
    by_unfold = series.unfold(0, win, 1)
    by_stack = torch.stack([series[i : i + win] for i in range(len(series) - win + 1)])
    assert torch.equal(by_unfold, by_stack)
    return by_unfold


def train(model, data, steps):
    series = torch.from_numpy(data["series"])
    w = windows(series, 8)  # [33, 8]: six inputs, two targets
    xs, ys = w[:, :6], w[:, 6:]
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps, pct_start=0.3)
    losses = []
    for step in range(steps):
        xb, yb = xs[step % 3 :: 3], ys[step % 3 :: 3]
        pred = model(xb)
        loss = F.smooth_l1_loss(pred, yb, beta=0.5) + 0.5 * F.huber_loss(pred, yb, delta=0.3)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses += [loss.item(), sched.get_last_lr()[0], opt.param_groups[0]["momentum"]]
    with torch.no_grad():
        pred = model(xs)
        losses += [F.l1_loss(pred, ys).item(), F.l1_loss(pred, ys, reduction="sum").item()]
        losses.append(F.mse_loss(pred, ys, reduction="sum").item())
    return losses
