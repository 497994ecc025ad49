# The autograd tutorial's custom function (a cubic Legendre polynomial with its own
# backward) inside a small network, a gradient hook that clips, a backward hook on a
# layer, and the legacy Tensor constructor for the step size.
import torch
from torch import nn


class LegendreP3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * (5 * x**3 - 3 * x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * x**2 - 1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 6)
        self.fc2 = nn.Linear(6, 1)

    def forward(self, x):
        h = LegendreP3.apply(torch.tanh(self.fc1(x)))
        if h.requires_grad:
            h.register_hook(lambda g: g.clamp(-0.05, 0.05))
        return self.fc2(h)


def build():
    return Net()


def train(model, data, steps):
    x = torch.tensor(data["x"][:, :5])
    y = torch.tensor(data["t"]).unsqueeze(1)
    seen = []
    model.fc2.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].abs().sum()))
    lr, losses = torch.Tensor([0.2]), []
    for _ in range(steps):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
                p.grad.zero_()
        losses.append(loss.item())
    return losses + [s.item() for s in seen]
