"""Autograd (autograd layer): the tape as data and VJP rules keyed by op name."""

from .mode import enable_grad, is_grad_enabled, no_grad  # noqa: F401
from .rules import VJP  # noqa: F401
from .tape import Node, backward  # noqa: F401
