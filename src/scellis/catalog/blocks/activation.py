"""The elementwise activation block (catalog layer): relu, tanh, sigmoid, gelu and friends.

Parameter-free; the output has the input's shape. Imported graphs (an ONNX ``Relu``,
torch's ``nn.Tanh``) need a standalone nonlinearity between dense layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import field, register
from .common import ACTIVATIONS, Block

FUNCTIONS = {**ACTIVATIONS, "sigmoid": lambda x: x.sigmoid()}


@dataclass(frozen=True)
class ActivationConfig:
    """An elementwise nonlinearity, y = f(x)."""

    function: str = field("relu", doc="the nonlinearity", choices=tuple(FUNCTIONS))


class Activation(Block):
    """No parameters; ``function`` names torch's F.relu, torch.tanh, F.gelu..."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: ActivationConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)

    def forward(self, x):
        return FUNCTIONS[self.config.function](x)


register("nn/activation", "block", ActivationConfig, Activation, builtin=True)
