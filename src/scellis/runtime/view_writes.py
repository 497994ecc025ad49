"""In-place writes that torch routes through views and saved values (runtime layer).

``torchlike._assign`` is the one in-place write; these are its cases beyond writing a
contiguous tensor's own storage: a write through a strided view reaches the storage it
shares (``x[:, 0].mul_(2)``), a recorded write through a view of an intermediate
reaches that tensor and its gradients (``h[:, 0].mul_(w)``), and the nodes that
computed an in-place result keep reading the value it replaced (``y.relu_()``).
"""

from __future__ import annotations

from ..devices.base import View

# ops whose result is a view of their input's storage (what ``x[...]``, ``.t()``,
# ``.view()``, ``.narrow()`` record)
_VIEW_OPS = frozenset({"reshape", "permute", "slice"})


def view_base(t):
    """The outermost live tensor whose storage the view ``t`` shares (through view ops
    only), if it is contiguous; else None."""
    base, node = None, t._node
    while node is not None and node.op in _VIEW_OPS and node.inputs:
        x = node.inputs[0]
        held = _held_tensor(x)
        if held is not None and held._buf is t._buf:
            base = held
        node = x._node
    return base if base is not None and base.is_contiguous() else None


def _held_tensor(x):
    """The tensor a node holds as an input (an edge's, while someone keeps it)."""
    return x.tensor() if hasattr(x, "tensor") and not hasattr(x, "_buf") else x


def write_into_base(t, base, new, what: str):
    """``new`` written into view ``t``'s places of ``base`` as a recorded op (the
    gradient reaches both), ``base`` updated in place and ``t`` made its view again."""
    keep_old_value(t, new)
    rel = t.offset - base.offset
    pos = _positions(t) + rel if rel else _positions(t)
    flat = new.reshape((-1,))
    placed = flat.scatter_add(pos, 0, (base.numel,))
    hit = flat.detach().ones_like().scatter_add(pos, 0, (base.numel,)) > 0.5
    base._assign(placed.where(hit, base.reshape((-1,))).reshape(base.shape), what)
    t._buf, t.offset = base._buf, base.offset + rel
    t._node, t.requires_grad = new._node, True
    return t


def _positions(t):
    """Each element of strided view ``t``'s place in its storage, counted from its first
    element (i32, flat)."""
    pos = None
    for d, (n, stride) in enumerate(zip(t.shape, t.strides)):
        step = t.arange_like(n).cast("i32").reshape([n if i == d else 1 for i in range(t.ndim)])
        term = step * stride if stride != 1 else step
        pos = term if pos is None else pos + term
    return pos.expand(t.shape).reshape((-1,))


def write_through_view(t, new) -> None:
    """``new``'s values written into the places of strided view ``t`` in its storage:
    the storage span the view covers is read, the view's places replaced (one scatter)
    and the span written back whole, so the tensor ``t`` was taken from sees the write."""
    pos = _positions(t)
    span = 1 + sum((n - 1) * stride for n, stride in zip(t.shape, t.strides))
    whole = type(t)(t._buf, (span,), (1,), t.offset, t.dtype, t.device)
    placed = new.reshape((-1,)).scatter_add(pos, 0, (span,))
    hit = new.reshape((-1,)).ones_like().scatter_add(pos, 0, (span,)) > 0.5
    merged = placed.where(hit, whole).prim("copy")  # fresh storage, then written back
    flat = View(merged._buf, (span,), (1,), 0, t.dtype)
    t.device.run("flat_gather", [flat], [View(t._buf, (span,), (1,), t.offset, t.dtype)], {})


# how many nodes behind an in-place result are searched for the tensor it replaces:
# the op's own few (a composite's), never the whole graph of a step
_OWN_NODES = 16


def keep_old_value(t, new) -> None:
    """The nodes that computed ``new`` from ``t`` read ``t`` as it was (``y.relu_()``,
    ``y.mul_(w)``); ``t`` is about to become ``new``, its old storage left as it was, so
    they are handed an alias of that storage instead, which their VJPs read as torch's
    saved original. A node recorded before the in-place op and not behind ``new`` keeps
    ``t`` itself and refuses in backward, as torch's version counter does."""
    old = t.detach()
    old._node, old.requires_grad = t._node, t.requires_grad
    stack, seen = [new._node], set()
    while stack and len(seen) < _OWN_NODES:
        node = stack.pop()
        if node is None or node is t._node or id(node) in seen or node.inputs is None:
            continue
        seen.add(id(node))
        if any(x is t for x in node.inputs):
            node.inputs = tuple(old if x is t else x for x in node.inputs)
        stack.extend(x._node for x in node.inputs if x is not None)
