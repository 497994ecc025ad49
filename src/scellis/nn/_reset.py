"""torch's ``reset_parameters`` (nn layer): a layer's parameters drawn again from its
default init, written into the same tensors, so an optimizer built before keeps
training them. The draws come from the eager streams, as every init here does."""

from __future__ import annotations

import math

from ..autograd import no_grad
from . import init


@no_grad()
def dense(self) -> None:
    """Linear and convolutions: weight and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
    fan_in every weight dim but the first (torch's kaiming_uniform_(a=sqrt(5)))."""
    fan_in = math.prod(self.weight.shape[1:])
    bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
    init.uniform_(self.weight, -bound, bound)
    if getattr(self, "bias", None) is not None:
        init.uniform_(self.bias, -bound, bound)


@no_grad()
def embedding(self) -> None:
    """N(0, 1) rows, the padding row zero."""
    init.normal_(self.weight)
    pad = getattr(self, "padding_idx", None)
    if pad is not None:
        self.weight[pad].fill_(0.0)


@no_grad()
def affine(self) -> None:
    """Normalisation layers: weight ones, bias zeros (and fresh running statistics)."""
    if getattr(self, "weight", None) is not None:
        init.ones_(self.weight)
    if getattr(self, "bias", None) is not None:
        init.zeros_(self.bias)
    if hasattr(self, "reset_running_stats"):
        self.reset_running_stats()


@no_grad()
def recurrent(self) -> None:
    """RNN, LSTM, GRU: every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    bound = 1.0 / math.sqrt(self.hidden_size)
    for p in self.parameters():
        init.uniform_(p, -bound, bound)
