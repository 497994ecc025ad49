"""Autograd (autograd layer): the tape as data and VJP rules keyed by op name."""

from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .grad import Variable, backward, grad  # noqa: F401
from .mode import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .rules import VJP  # noqa: F401
from .tape import Node  # noqa: F401
