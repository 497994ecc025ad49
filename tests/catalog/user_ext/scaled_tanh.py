"""A user's block: y = gain * tanh(x / scale), with a learned per-feature gain."""

from dataclasses import dataclass

from scellis.catalog import field, register
from scellis.catalog.blocks import Block


@dataclass(frozen=True)
class ScaledTanhConfig:
    """A squashing nonlinearity with a learned per-feature output gain."""

    features: int = field(doc="size of the input's last axis", min=1)
    scale: float = field(
        1.0, doc="inputs are divided by this before tanh", min=0.0, exclusive_min=True
    )
    init_gain: float = field(1.0, doc="the gain's starting value")


class ScaledTanh(Block):
    def __init__(self, cfg: ScaledTanhConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        self.gain = self.constant((cfg.features,), cfg.init_gain)

    def forward(self, x):
        return (x * (1.0 / self.config.scale)).tanh() * self.gain


register("user/block/scaled_tanh", "block", ScaledTanhConfig, ScaledTanh)
