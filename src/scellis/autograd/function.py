"""torch's ``autograd.Function`` (autograd layer): a forward and a backward written by hand.

``MyOp.apply(x, ...)`` runs ``MyOp.forward(ctx, x, ...)`` with the tape off and puts
one node on the tape for its result, whose VJP is ``MyOp.backward(ctx, grad)``: one
gradient per forward argument (None for a non-tensor, or for a tensor that needs none).
The node holds every tensor argument, and ``ctx.save_for_backward`` keeps what the
backward reads. One tensor result per call (torch allows several; here they are refused
with a message rather than given a wrong gradient).
"""

from __future__ import annotations

from ..base.errors import AutogradError
from .mode import is_grad_enabled, no_grad
from .tape import Node


def _is_tensor(x) -> bool:
    return hasattr(x, "_buf") and hasattr(x, "requires_grad")


class FunctionCtx:
    """What ``forward`` hands to ``backward``: saved tensors and any attribute set on it."""

    def __init__(self, needs: tuple[bool, ...]):
        self.needs_input_grad = needs
        self.saved_tensors: tuple = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        self.saved_tensors = tuple(tensors)

    def mark_dirty(self, *tensors) -> None:
        """Accepted: an input written in place by ``forward`` is its own result here."""

    def mark_non_differentiable(self, *tensors) -> None:
        """Accepted: an integer or mask result has no gradient anyway."""

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call
    ``apply``, as in torch."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass defines forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("a Function subclass defines backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        needs = tuple(_is_tensor(a) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not (is_grad_enabled() and any(needs)):
            return out
        if not _is_tensor(out):
            raise AutogradError(
                f"{cls.__name__}.forward returned {type(out).__name__}: a Function here "
                "gives one tensor (split several results into several Functions)"
            )
        if any(out is a for a in args):  # an input passed through: its own result object
            out = out.detach()
        at = [i for i, a in enumerate(args) if _is_tensor(a)]
        inputs = tuple(args[i] for i in at)
        node = Node(cls.__name__, inputs, {}, tuple(needs[i] for i in at), out.shape, out.dtype)
        node.rule = lambda n, g: _backward(cls, ctx, len(args), at, g)
        out._node, out.requires_grad = node, True
        return out


def _backward(cls, ctx, n_args: int, at: list[int], g) -> tuple:
    """The user's backward, its gradients matched to the node's tensor inputs."""
    grads = cls.backward(ctx, g)
    grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
    extra = grads[n_args:]
    if len(grads) < n_args or any(x is not None for x in extra):
        raise AutogradError(
            f"{cls.__name__}.backward returned {len(grads)} gradients for "
            f"{n_args} forward arguments"
        )
    return tuple(grads[i] for i in at)
