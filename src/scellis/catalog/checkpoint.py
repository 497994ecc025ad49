"""Activation rematerialisation (catalog layer): run a block without keeping its activations.

``checkpoint(module, *args)`` runs the block's forward with the tape off, so none of
its intermediate tensors outlive the call: the tape gets one node whose inputs are
the block's tensor arguments and parameters. Its VJP runs the forward again with the
tape on (the same ops on the same values, the Philox dropout stream rewound to where
the first forward drew), then walks that inner tape back to the node's inputs with
``grads_at``. Every kernel sees the same inputs in the same order as without
checkpointing, and shares are added in ``backward``'s order, so on the ``debug`` tier
the gradients are bitwise those of the plain run. The price: one extra forward of the
block per backward.

Under mixed precision the block's forward reads the f16 working copies its parameters'
attributes hold at that moment (``train.step.working_copies``), not the f32 masters:
the node's inputs are those copies (their casts carry the gradients on to the masters,
so every gradient stays f32 and one dtype), and the recompute, which runs after the
copies were swapped back out, puts the same copies in place while it runs.
"""

from __future__ import annotations

import contextlib

from ..autograd import VJP, is_grad_enabled, no_grad
from ..autograd.mode import enable_grad
from ..autograd.tape import Node, grads_at
from ..runtime.creation import generator
from ..runtime.tensor import Tensor

STREAM = "dropout"  # the only stream a block's forward draws from during training


def checkpoint(module, *args):
    """``module(*args)`` whose activations are recomputed in backward, not saved."""
    held = _held(module)
    params = [t for _, _, t in held if t.requires_grad]
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not is_grad_enabled() or not any(t.requires_grad for t in tensors + params):
        return module(*args)
    live = generator(STREAM)
    at = (live.seed, live.step, live.draw)
    with no_grad():
        out = module(*args)
    if not isinstance(out, Tensor) or any(out is t for t in tensors) or not out.dtype.is_float:
        return module(*args)  # nothing to rematerialise (identity, tuple or integer result)
    inputs = tuple(tensors + params)
    # the node keeps every input as a tensor (no ``reads``): its VJP recomputes from them,
    # and the parameters are the inner walk's targets, matched by identity
    node = Node(
        "checkpoint", inputs, {}, tuple(t.requires_grad for t in inputs), out.shape, out.dtype
    )
    node.rule = lambda n, g: _recompute(module, args, len(tensors), at, n, g, held)
    out._node = node
    out.requires_grad = True
    return out


def _held(module) -> list[tuple]:
    """(owner, name, tensor) of every parameter attribute as the forward reads it now:
    the master itself, or the working copy the precision policy swapped in."""
    owners = dict(module.named_modules())
    out = []
    for path, _ in module.named_parameters():
        owner, _, name = path.rpartition(".")
        out.append((owners[owner], name, getattr(owners[owner], name)))
    return out


@contextlib.contextmanager
def _holding(held: list[tuple]):
    """The attributes set to what they held at the first forward, restored on exit."""
    before = [(mod, name, getattr(mod, name)) for mod, name, _ in held]
    for mod, name, t in held:
        object.__setattr__(mod, name, t)
    try:
        yield
    finally:
        for mod, name, t in before:
            object.__setattr__(mod, name, t)


def _recompute(module, args, n_tensors: int, at: tuple, node, g, held):
    live = generator(STREAM)
    now = (live.seed, live.step, live.draw)
    leaves, new_args = [], []
    for a in args:
        if isinstance(a, Tensor):
            a = a.detach().requires_grad_(a.requires_grad)
            leaves.append(a)
        new_args.append(a)
    params = list(node.inputs[n_tensors:])
    live.seed, live.step, live.draw = at
    try:
        with enable_grad(), _holding(held):
            out = module(*new_args)
    finally:
        live.seed, live.step, live.draw = now
    targets = leaves + params
    with no_grad():
        return tuple(grads_at(out, g, targets, VJP))
