"""The activation block (catalog layer): relu, tanh, sigmoid, gelu and friends, softmax.

Parameter-free; the output has the input's shape. Imported graphs (an ONNX ``Relu``,
torch's ``nn.Tanh``) need a standalone nonlinearity between dense layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import field, register
from .common import ACTIVATIONS, Block

# softmax normalises over the last axis (each position alone, like the elementwise ones)
FUNCTIONS = {
    **ACTIVATIONS,
    "sigmoid": lambda x: x.sigmoid(),
    "softmax": lambda x: x.softmax(-1),
}


@dataclass(frozen=True)
class ActivationConfig:
    """A nonlinearity, y = f(x): elementwise, or softmax over the last axis."""

    function: str = field("relu", doc="the nonlinearity", choices=tuple(FUNCTIONS))


class Activation(Block):
    """No parameters; ``function`` names torch's F.relu, torch.tanh, F.gelu..."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: ActivationConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)

    def forward(self, x):
        return FUNCTIONS[self.config.function](x)


register("nn/activation", "block", ActivationConfig, Activation, builtin=True)
