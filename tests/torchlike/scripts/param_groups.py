# A hand-written module: nn.Parameter made from tensors, a registered buffer updated in
# forward, a custom autograd.Function, an in-place relu_ on an intermediate, a gradient
# hook on a parameter, parameter groups with their own learning rates, LambdaLR with one
# lambda per group, and learning rates edited through optimizer.param_groups mid-training.
import torch
import torch.nn as nn
import torch.nn.functional as F


class SoftClip(torch.autograd.Function):
    """tanh forward; the backward written by hand from the saved output."""

    @staticmethod
    def forward(ctx, x, limit):
        y = torch.tanh(x / limit) * limit
        ctx.save_for_backward(y)
        ctx.limit = limit
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - (y / ctx.limit) ** 2), None


class ScaledNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 10)
        self.gain = nn.Parameter(torch.ones(10))
        self.shift = nn.Parameter(torch.zeros(10))
        self.proj = nn.Parameter(torch.linspace(-0.5, 0.5, 30).reshape(10, 3))
        self.register_buffer("running", torch.zeros(10))
        self.register_buffer("steps", torch.tensor(0))

    def forward(self, x):
        h = self.body(x)
        if self.training:
            with torch.no_grad():
                self.running.mul_(0.9).add_(h.mean(0), alpha=0.1)
                self.steps += 1
        h = (h - self.running) * self.gain + self.shift
        h = SoftClip.apply(h, 2.0) + h.clone().relu_() * 0.1
        return h @ self.proj


def build():
    return ScaledNet()


def train(model, data, steps):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    model.gain.register_hook(lambda g: g.clamp(-0.05, 0.05))
    decayed = [p for n, p in model.named_parameters() if n.endswith("weight") or n == "proj"]
    rest = [p for n, p in model.named_parameters() if not (n.endswith("weight") or n == "proj")]
    opt = torch.optim.AdamW(
        [
            {"params": decayed, "weight_decay": 0.05},
            {"params": rest, "lr": 2e-2, "weight_decay": 0.0},
        ],
        lr=5e-3,
    )
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lr_lambda=[lambda e: 1.0 / (1 + e), lambda e: 0.9**e]
    )
    losses = []
    for step in range(steps):
        model.train()
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step == steps // 2:
            for group in opt.param_groups:
                group["lr"] = group["lr"] * 0.5
        losses += [loss.item(), *sched.get_last_lr(), opt.param_groups[1]["lr"]]
    model.eval()
    with torch.no_grad():
        losses += [model.running.sum().item(), float(model.steps.item())]
        losses.append(F.cross_entropy(model(x), y).item())
    losses.append(float(sum(b.numel() for b in model.buffers())))
    return losses
