"""The tape (autograd layer): nodes as data, and reverse-mode accumulation over them.

A node records one primitive application: op name, inputs, attrs and the values its
VJP needs (``saved``: detached tensors, so the graph holds no cycles). A node holds an
input tensor itself only where its VJP reads that input's value (the rule table's
``reads``, given which inputs need a gradient) or where the input is a leaf that needs
a gradient (a parameter: the target the gradient is written to). Every other input is
held as an ``Edge``: the producer node, shape and dtype the backward walk needs, and a
weak reference to the tensor, so an intermediate no VJP reads (the two terms of an
``add``) is freed when the forward drops it instead of living until backward.

A node may carry its own ``rule`` (a rematerialised block: its VJP recomputes the
block); every other node's VJP is looked up by op name.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..base.errors import AutogradError
from .mode import no_grad


class Edge:
    """A node's input whose value its VJP does not read: what the backward walk needs
    of the tensor (its producer node, whether it needs a gradient, its shape and dtype)
    without keeping its storage alive. ``tensor()`` is the tensor while something else
    keeps it (for ``retain_grad``), else None."""

    __slots__ = ("_node", "requires_grad", "shape", "strides", "dtype", "_ref")

    def __init__(self, t):
        self._node = t._node
        self.requires_grad = t.requires_grad
        self.shape = t.shape
        self.strides = t.strides  # the layout a rule may follow (matmul's weight gradient)
        self.dtype = t.dtype
        self._ref = weakref.ref(t)

    def tensor(self):
        return self._ref()

    @property
    def _retains_grad(self) -> bool:
        t = self._ref()
        return t is not None and t._retains_grad

    def __repr__(self) -> str:
        return f"Edge({self.shape}, {self.dtype})"


def key(t) -> int:
    """The one key of a tensor on the tape, whether reached as itself or as an ``Edge``:
    its producer node's id (each node has exactly one result), or a leaf's own id."""
    node = t._node
    return id(t) if node is None else id(node)


def _tensor(x):
    """The tensor behind an input as a node holds it (None: an edge's tensor is gone)."""
    return x.tensor() if isinstance(x, Edge) else x


def _hold(inputs: tuple, reads) -> tuple:
    """``inputs`` as a node keeps them: the tensor where ``reads`` says its value is read
    or it is a leaf that needs a gradient, else an ``Edge``."""
    if reads is None:
        return inputs
    return tuple(
        [
            x if x is None or r or (x._node is None and x.requires_grad) else Edge(x)
            for x, r in zip(inputs, reads)
        ]
    )


class Node:
    __slots__ = (
        "op", "inputs", "attrs", "saved", "needs", "out_shape", "out_dtype", "rule", "versions",
        "out_version", "_grad_hooks",
    )  # fmt: skip

    def __init__(
        self,
        op: str,
        inputs: tuple,
        attrs: dict,
        needs: tuple[bool, ...],
        out_shape: tuple[int, ...],
        out_dtype: Any,
        reads: tuple[bool, ...] | None = None,
    ):
        """``reads[i]``: whether the VJP reads input i's value (None: every input's)."""
        self.op, self.inputs, self.attrs, self.needs = op, _hold(inputs, reads), attrs, needs
        self.out_shape, self.out_dtype = out_shape, out_dtype
        self.saved: dict[str, Any] = {}
        self.rule = None  # rule(node, g) of this node alone, or None: rules[op]
        # the held inputs' in-place versions when recorded: a VJP reads them, so one
        # changed in place since would give a wrong gradient (checked in backward); an
        # edge's value is not read, so a change to it is harmless and not recorded
        self.versions = tuple(
            [None if isinstance(x, Edge) else getattr(x, "_version", None) for x in self.inputs]
        )
        self.out_version = None  # the result's, where the VJP reads it (saved["out"])

    def __repr__(self) -> str:
        return f"Node({self.op}, {self.out_shape}, {self.out_dtype})"


def _topo(root, stop=frozenset()) -> list:
    """Tensors with a node (or their edges), in an order where every one precedes its
    inputs; the walk does not descend past one whose ``key`` is in ``stop``."""
    return [t for t, _ in _walk(root, stop)]


def _walk(root, stop=frozenset()) -> list:
    """``_topo``'s order as (tensor or edge, its ``key``) pairs. ``key`` is written out
    inline: the walk visits every recorded op of a step, twice over."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        node = t._node
        k = id(t) if node is None else id(node)
        if k in seen:
            continue
        seen.add(k)
        stack.append(((t, k), True))
        if node is None or k in stop:
            continue
        if node.inputs is None:
            raise AutogradError(
                "backward through a graph that was already freed; "
                "pass retain_graph=True to the first backward"
            )
        for x in node.inputs:
            if x is not None and x.requires_grad:
                xn = x._node
                if (id(x) if xn is None else id(xn)) not in seen:
                    stack.append((x, False))
    order.reverse()
    return order


class HookHandle:
    """What ``register_hook`` returns: ``remove()`` takes the hook off again."""

    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def add_grad_hook(t, hook) -> HookHandle:
    """``hook(grad)`` called with the gradient reaching ``t`` (its return, if not None,
    replacing it), as torch's ``Tensor.register_hook``: kept on ``t``'s node, which the
    walk meets whether the node holds ``t`` or an edge to it, or on ``t`` for a leaf."""
    if not t.requires_grad:
        raise AutogradError("register_hook on a tensor that does not require grad")
    owner = t if t._node is None else t._node
    hooks = getattr(owner, "_grad_hooks", None)
    if hooks is None:
        hooks = owner._grad_hooks = []
    hooks.append(hook)
    return HookHandle(hooks, hook)


def _hooked(t, g):
    """``g`` passed through the hooks registered on ``t`` (tensor or edge), in order."""
    owner = t._node if t._node is not None else _tensor(t)
    for hook in getattr(owner, "_grad_hooks", None) or ():
        out = hook(g)
        g = g if out is None else out
    return g


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
        grads[key(root)] = grad if grad.dtype == root.dtype else grad.cast(root.dtype)
        for t, k in _walk(root):
            g = grads.pop(k, None)
            if g is None:
                continue
            node = t._node
            g = _hooked(t, g)
            if node is None or t._retains_grad:
                held = _tensor(t)  # an edge's tensor is gone: no one can read its .grad
                if held is not None:
                    held.grad = g if held.grad is None else held.grad + g
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
    changed = []
    for k, (x, v) in enumerate(zip(node.inputs, node.versions)):
        if v is not None and x is not None and x._version != v:
            changed.append((k, x))
            break  # the first is the one reported
    if not changed and node.out_version is not None and "out" in node.saved:
        out = _tensor(t)
        if out is None:  # the result is gone; its storage is the saved value's
            out = node.saved["out"]
        if node.out_version != out._version:
            changed.append(("the result", out))
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
        k = key(x)
        prev = grads.get(k)
        grads[k] = gx if prev is None else prev + gx


def grads_at(root, grad, targets, rules) -> list:
    """d(root)/d(t) for each tensor in ``targets`` (None where none reaches it), written
    nowhere else: no ``.grad`` changes and the graph is kept. The walk stops at the
    targets and adds shares in the order ``backward`` does, so a gradient found here is
    bitwise the one ``backward`` would have accumulated there."""
    stop = {key(t) for t in targets}
    grads: dict[int, Any] = {key(root): grad}
    found: dict[int, Any] = {}
    with no_grad():
        for t, k in _walk(root, frozenset(stop)):
            g = grads.pop(k, None)
            if g is None:
                continue
            g = _hooked(t, g)
            if k in stop:
                found[k] = g
                continue
            if t._node is not None:
                _propagate(t._node, g, grads, rules)
    return [found.get(key(t)) for t in targets]
