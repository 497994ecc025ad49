"""A user's optimizer for the tab's Load extension…: signSGD, each weight moved by lr in
the direction its gradient falls, registered through the public catalog API."""

from dataclasses import dataclass

from scellis import no_grad
from scellis.catalog import field, register
from scellis.catalog.optim import Optimizer
from scellis.runtime.dispatch import apply_inplace


@dataclass(frozen=True)
class SignSGDConfig:
    """Steps of lr against the sign of each gradient."""

    lr: float = field(0.01, doc="step size", min=0.0, exclusive_min=True)


class SignSGD(Optimizer):
    config = SignSGDConfig

    @no_grad()
    def step(self) -> None:
        self.step_count += 1
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    g = p.grad
                    # sign(g) as g / (|g| + tiny): ordinary tensor ops, no new kernel
                    new = (p - g / (g.abs() + 1e-12) * group["lr"]).reshape(-1)
                    apply_inplace("flat_gather", (new,), (p.reshape(-1),))


register("user/optimizer/sign_sgd", "optimizer", SignSGDConfig, SignSGD)
