# Fine-tuning as tutorials write it: a backbone frozen with requires_grad_(False), an
# optimizer over filter(lambda p: p.requires_grad, ...), the backbone unfrozen later
# through add_param_group (a StepLR made after it continues from the rate it finds),
# clip_grad_value_, RMSprop with momentum, a cosine schedule stepped per batch and read
# with get_last_lr(), and a mid-training checkpoint (model,
# optimizer and scheduler state in one dict) saved with torch.save and resumed into a
# fresh model, optimizer and scheduler.
import io

import torch
import torch.nn as nn
import torch.nn.functional as F


class Finetune(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh())
        self.classifier = nn.Linear(16, 3)

    def forward(self, x):
        return self.classifier(self.backbone(x))


def build():
    return Finetune()


def make_opt(model):
    for p in model.backbone.parameters():
        p.requires_grad_(False)
    opt = torch.optim.RMSprop(
        filter(lambda p: p.requires_grad, model.parameters()), lr=5e-3, alpha=0.9, momentum=0.5
    )
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=1e-4)
    return opt, sched


def step(model, opt, sched, xb, yb):
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.1)
    opt.step()
    sched.step()
    return [loss.item(), sched.get_last_lr()[0]]


def train(model, data, steps):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    opt, sched = make_opt(model)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    losses = [float(trainable)]
    frozen_before = model.backbone[0].weight.detach().clone()
    for i in range(steps):
        losses += step(
            model, opt, sched, x[(i % 3) * 8 : (i % 3) * 8 + 8], y[(i % 3) * 8 : (i % 3) * 8 + 8]
        )
    # a frozen layer has no gradient and did not move
    losses.append(float(model.backbone[0].weight.grad is None))
    losses.append((model.backbone[0].weight - frozen_before).abs().sum().item())
    buf = io.BytesIO()
    torch.save(
        {
            "epoch": steps,
            "model_state_dict": model.state_dict(),
            "optimizer_state_dict": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "loss": losses[-3],
        },
        buf,
    )
    buf.seek(0)
    checkpoint = torch.load(buf)
    resumed = build()
    resumed.load_state_dict(checkpoint["model_state_dict"])
    opt2, sched2 = make_opt(resumed)
    opt2.load_state_dict(checkpoint["optimizer_state_dict"])
    sched2.load_state_dict(checkpoint["scheduler"])
    losses += [float(checkpoint["epoch"]), checkpoint["loss"], sched2.get_last_lr()[0]]
    # unfreeze the backbone with its own, smaller rate, under a new schedule
    for p in resumed.backbone.parameters():
        p.requires_grad = True
    opt2.add_param_group({"params": resumed.backbone.parameters(), "lr": 1e-3})
    sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
    resumed.train()
    for i in range(steps):
        losses += step(
            resumed,
            opt2,
            sched2,
            x[(i % 3) * 8 : (i % 3) * 8 + 8],
            y[(i % 3) * 8 : (i % 3) * 8 + 8],
        )
        losses.append(opt2.param_groups[1]["lr"])
    return losses
