"""Fixtures for the optimizer tests: the devices they run on, and torch's Lion twin."""

import os
import tempfile

import pytest
import torch

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

DEVICES = ["reference", pytest.param("webgpu", marks=pytest.mark.webgpu)]


class TorchLion(torch.optim.Optimizer):
    """Lion as its authors' reference (lion-pytorch) writes it, in torch ops."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
        super().__init__(
            params, {"lr": lr, "betas": betas, "weight_decay": weight_decay, "maximize": maximize}
        )

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, wd, (b1, b2) = group["lr"], group["weight_decay"], group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if "exp_avg" not in state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - lr * wd)
                update = m.clone().mul_(b1).add(g, alpha=1 - b1).sign_()
                p.add_(update, alpha=-lr)
                m.mul_(b2).add_(g, alpha=1 - b2)
