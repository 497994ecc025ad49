"""The tape (autograd layer): nodes as data, and reverse-mode accumulation over them.

A node records one primitive application: op name, input tensors, attrs and the
values its VJP needs (``saved``: detached tensors, so the graph holds no cycles).
A node may carry its own ``rule`` (a rematerialised block: its VJP recomputes the
block); every other node's VJP is looked up by op name.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import AutogradError
from .mode import no_grad


class Node:
    __slots__ = (
        "op", "inputs", "attrs", "saved", "needs", "out_shape", "out_dtype", "rule", "versions",
        "out_version",
    )  # fmt: skip

    def __init__(
        self,
        op: str,
        inputs: tuple,
        attrs: dict,
        needs: tuple[bool, ...],
        out_shape: tuple[int, ...],
        out_dtype: Any,
    ):
        self.op, self.inputs, self.attrs, self.needs = op, inputs, attrs, needs
        self.out_shape, self.out_dtype = out_shape, out_dtype
        self.saved: dict[str, Any] = {}
        self.rule = None  # rule(node, g) of this node alone, or None: rules[op]
        # the inputs' in-place versions when recorded: a VJP reads the inputs, so one
        # changed in place since would give a wrong gradient (checked in backward)
        self.versions = tuple(getattr(x, "_version", None) for x in inputs)
        self.out_version = None  # the result's, where the VJP reads it (saved["out"])

    def __repr__(self) -> str:
        return f"Node({self.op}, {self.out_shape}, {self.out_dtype})"


def _topo(root, stop=frozenset()) -> list:
    """Tensors with a node, in an order where every tensor precedes its inputs; the walk
    does not descend past a tensor whose id is in ``stop``."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        if id(t) in seen:
            continue
        seen.add(id(t))
        stack.append((t, True))
        node = t._node
        if node is None or id(t) in stop:
            continue
        if node.inputs is None:
            raise AutogradError(
                "backward through a graph that was already freed; "
                "pass retain_graph=True to the first backward"
            )
        for x in node.inputs:
            if x is not None and x.requires_grad and id(x) not in seen:
                stack.append((x, False))
    order.reverse()
    return order


def backward(root, grad=None, retain_graph: bool = False, rules=None) -> None:
    """Accumulate d(root)/d(leaf) into every leaf's ``.grad``."""
    if not root.requires_grad:
        raise AutogradError("backward() on a tensor that does not require grad")
    if grad is None:
        if root.numel != 1:
            raise AutogradError(
                f"backward() on a tensor of shape {root.shape} needs a "
                "gradient argument (only scalars get an implicit 1)"
            )
        grad = root.ones_like()
    elif tuple(grad.shape) != tuple(root.shape):
        raise AutogradError(
            f"backward() gradient of shape {tuple(grad.shape)} for a tensor of shape {root.shape}"
        )
    grads: dict[int, Any] = {}
    with no_grad():
        grads[id(root)] = grad if grad.dtype == root.dtype else grad.cast(root.dtype)
        for t in _topo(root):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            node = t._node
            if node is None or t._retains_grad:
                t.grad = g if t.grad is None else t.grad + g
            if node is None:
                continue
            _check_versions(t, node)
            _propagate(node, g, grads, rules)
            if not retain_graph:
                node.inputs = None
                node.saved = {}


def _check_versions(t, node) -> None:
    """Refuse a backward through a node whose inputs (or saved result) were changed in
    place after the forward used them, as torch does."""
    changed = [
        (k, x) for k, (x, v) in enumerate(zip(node.inputs, node.versions))
        if x is not None and getattr(x, "_version", None) != v
    ]  # fmt: skip
    if "out" in node.saved and node.out_version not in (None, t._version):
        changed.append(("the result", t))
    if changed:
        k, x = changed[0]
        which = f"input {k}" if isinstance(k, int) else k
        raise AutogradError(
            f"a tensor the backward of {node.op} needs ({which}, shape {tuple(x.shape)}) was "
            "changed by an in-place operation after it was used; change a .clone() instead"
        )


def _propagate(node, g, grads: dict, rules) -> None:
    """Apply ``node``'s VJP to ``g`` and add each input's share into ``grads``."""
    gins = (node.rule or rules[node.op])(node, g)
    for x, gx, need in zip(node.inputs, gins, node.needs):
        if not need or gx is None:
            continue
        if gx.shape != x.shape:
            raise AutogradError(
                f"VJP of {node.op} gave shape {gx.shape} for an input of shape {x.shape}"
            )
        prev = grads.get(id(x))
        grads[id(x)] = gx if prev is None else prev + gx


def grads_at(root, grad, targets, rules) -> list:
    """d(root)/d(t) for each tensor in ``targets`` (None where none reaches it), written
    nowhere else: no ``.grad`` changes and the graph is kept. The walk stops at the
    targets and adds shares in the order ``backward`` does, so a gradient found here is
    bitwise the one ``backward`` would have accumulated there."""
    stop = {id(t) for t in targets}
    grads: dict[int, Any] = {id(root): grad}
    found: dict[int, Any] = {}
    with no_grad():
        for t in _topo(root, frozenset(stop)):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if id(t) in stop:
                found[id(t)] = g
                continue
            if t._node is not None:
                _propagate(t._node, g, grads, rules)
    return [found.get(id(t)) for t in targets]
