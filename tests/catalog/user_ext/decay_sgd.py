"""A user's optimizer: SGD whose step size decays as lr / (1 + decay * t).

Registered through the public catalog API exactly as a built-in optimizer; its update
is written with ordinary tensor ops, then copied into the parameter's storage
(``flat_gather`` of one tensor is a copy).
"""

from dataclasses import dataclass

from scellis import no_grad
from scellis.catalog import field, register
from scellis.catalog.optim import Optimizer
from scellis.runtime.dispatch import apply_inplace


@dataclass(frozen=True)
class DecaySGDConfig:
    """SGD with a step size of lr / (1 + decay * step)."""

    lr: float = field(0.1, doc="initial learning rate", min=0.0, exclusive_min=True)
    decay: float = field(0.01, doc="how fast the step size shrinks per step", min=0.0)


class DecaySGD(Optimizer):
    config = DecaySGDConfig

    @no_grad()
    def step(self) -> None:
        self.step_count += 1
        for group in self.param_groups:
            rate = group["lr"] / (1.0 + group["decay"] * (self.step_count - 1))
            for p in group["params"]:
                if p.grad is not None:
                    new = (p - p.grad * rate).reshape(-1)
                    apply_inplace("flat_gather", (new,), (p.reshape(-1),))


register("user/optimizer/decay_sgd", "optimizer", DecaySGDConfig, DecaySGD)
