"""Where the batch (and length) live in an ONNX graph exported at fixed shapes (codecs layer).

An exporter given no dynamic axes bakes the batch B it traced with into the graph's
shape constants: Reshape targets ([B, T, E], [B*T, E], torch's [T, B*H, D]), Expand
targets and host masks ([B, 1, T, T]). The op-level importer runs the graph twice on
the shapes-only device, at B and at another batch; the axis whose size differs between
the two runs is the batch axis of each value. A Reshape target is rewritten at the one
axis that holds the batch (``-1`` there: that axis alone follows the batch), an Expand
target keeps the input's batch (``1`` there) and a constant that is the same for every
batch entry is cut to one entry, which broadcasting gives back at any batch.

The batch of a value is (axis, outer): its elements in row-major order are
[pre][B][post], with pre = prod(shape[:axis]) * outer (outer > 1 where the batch is
merged inside an axis after other dims, as [T*B, E]). With B >= 2 exactly one axis of
a reshape's target can hold that [B] block, so the rewrite is never a guess; with B == 1
it could be any axis of size 1, and the graph keeps its fixed batch.

The length T (the input's axis 1) is followed the same way, with a third probe at T + 1,
where the model allows it: a Reshape target takes ``-1`` for one axis and ``0`` (the
input's own size) where it can, else it is computed at each call from the record input's
shape (Shape, Gather, Mul, Add on the host), as splitting torch's [T*B, 3E] into
[T, B, 3, E] needs. A model whose values depend on the length (position rows folded for
T, a mask of another kind than causal) fails a probe and keeps its exported length; the
importer then tries the batch alone, then neither.
"""

from __future__ import annotations

import math

from ...base.errors import ScellisError
from ...catalog.blocks.onnx_op import host as H
from ...catalog.blocks.onnx_op.block import record_form
from .values import Run

# ops that move elements to other axes: the batch's place follows the flat order
RESHAPES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}
# ops that broadcast a constant operand against a model tensor
BROADCASTS = set(H.BINARY) | {"Where"}


class FixedBatch(Exception):
    """The graph cannot follow another batch than the one it was exported with."""


def changed_axis(a: tuple, b: tuple) -> int | None:
    """The one axis where two shapes of the same value differ (None: none or several)."""
    if len(a) != len(b):
        return None
    diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return diff[0] if len(diff) == 1 else None


def reshaped(in_shape: tuple, at: tuple, target: list[int], batch: int) -> tuple | None:
    """(new target, (axis, outer) in the output) of a Reshape whose input holds the
    batch at ``at``, or None when no axis of the target holds it whole."""
    axis, outer = at
    pre = math.prod(in_shape[:axis]) * outer
    for j in range(len(target)):
        before = math.prod(target[:j])
        if before and pre % before == 0 and (before * target[j]) % (pre * batch) == 0:
            free = list(target)
            free[j] = -1
            return free, (j, pre // before)
    return None


def expanded(in_shape: tuple, at: tuple, target: list[int], batch: int) -> list[int] | None:
    """An Expand target that keeps the input's batch axis (1 there: the input's size)."""
    axis = at[0] + len(target) - len(in_shape)
    if axis < 0 or at[1] != 1 or target[axis] not in (1, batch):
        return None
    free = list(target)
    free[axis] = 1
    return free


def one_entry(h: H.Host, axis: int, batch: int) -> H.Host | None:
    """``h`` cut to its first entry along ``axis`` when every entry along it is equal
    (a mask built for each sequence of the batch alike); None when they differ."""
    shape = list(h.shape)
    if not 0 <= axis < len(shape) or shape[axis] != batch:
        return None
    inner = math.prod(shape[axis + 1 :])
    outer = math.prod(shape[:axis])
    vals, kept = h.values, []
    for o in range(outer):
        base = o * batch * inner
        first = vals[base : base + inner]
        for k in range(1, batch):
            if vals[base + k * inner : base + (k + 1) * inner] != first:
                return None
        kept.extend(first)
    shape[axis] = 1
    return H.make(h.dtype, shape, kept)


def _reshape_free(shape: tuple, places: dict, target: list[int], zero_copies: bool) -> list | None:
    """A Reshape target with each free dim's axis made to follow it: ``-1`` for one axis
    (every free dim merged in it, or the one left), ``0`` (the input's own size) where the
    axis is the input's same axis holding that dim alone; None when more is needed."""
    axes: dict[int, list] = {}
    for sym, (at, value) in places.items():
        got = reshaped(shape, at, target, value)
        if got is None:
            return None
        axes.setdefault(got[1][0], []).append((sym, at, value))
    free, minus = list(target), []
    for j, syms in axes.items():
        (_, at, value), alone = syms[0], len(syms) == 1
        own = zero_copies and alone and at == (j, 1) and j < len(shape)
        if own and shape[j] == target[j] == value:
            free[j] = 0
        else:
            minus.append(j)
    if len(minus) > 1 or any(d == 0 for d in target):
        return None
    for j in minus:
        free[j] = -1
    return free


class FreeDims:
    """The op-level importer's side of this (``GraphImporter`` mixes it in). ``free``:
    each dim the graph can follow, its input axis and exported size (``batch``, and
    ``seq`` where the model allows it); ``probe`` each block's output on the
    shapes-only device at the exported sizes, ``alt[sym]`` with that dim one larger,
    ``at[sym]`` each block's place of that dim."""

    def _probe_free(self, name: str, mod, ins: list[str], at) -> None:
        for sym, (_, value) in self.free.items():
            try:
                got = mod(*[self.alt[sym][i] for i in ins])
            except ScellisError as e:
                raise FixedBatch(f"{name}: {e}") from None
            self.alt[sym][name] = got
            places = self.at[sym]
            axis = changed_axis(tuple(self.probe[name].shape), tuple(got.shape))
            place = None
            if at == "flat" and ins[0] in places:  # a reshape: the flat place, in its output
                moved = reshaped(tuple(self.probe[ins[0]].shape), places[ins[0]],
                                 list(self.probe[name].shape), value)  # fmt: skip
                place = moved[1] if moved else None
            elif at is None and axis is not None:
                place = (axis, next((places[i][1] for i in ins if i in places), 1))
            if place is not None and place[0] == axis:
                places[name] = place

    def _follow(self, node, k: int, v, src: str | None):
        """A constant operand of ``node`` rewritten to follow the free dims of its model
        tensor ``src``; ``v`` unchanged when none is involved."""
        places = {s: (self.at[s][src], val) for s, (_, val) in self.free.items()
                  if src in self.at[s]}  # fmt: skip
        if not places or not isinstance(v, H.Host):
            return v
        shape = tuple(self.probe[src].shape)
        if node.op == "Reshape" and k == 1:
            literal = bool(node.attrs.get("allowzero", 0))  # 0 is a size, not a copy
            target = H.reshape_target(shape, v.ints(), literal)
            got = _reshape_free(shape, places, list(target), not literal)
            if got is not None:
                return H.vector(got)
            return self._runtime_target(node, shape, places, list(target))
        for sym, (at, value) in places.items():
            if node.op == "Expand" and k == 1:
                got = expanded(shape, at, v.ints(), value)
                if got is None:
                    raise FixedBatch(f"{node.label()}: Expand to {v.ints()} changes {sym}")
                v = H.vector(got)
            elif node.op in BROADCASTS and len(v.shape) >= len(shape) - at[0] > 0:
                axis = at[0] + len(v.shape) - len(shape)
                if v.shape[axis] == value:
                    v = one_entry(v, axis, value)
                    if v is None:
                        raise FixedBatch(f"{node.label()}: a constant differs along {sym}")
        return v

    def _runtime_target(self, node, shape: tuple, places: dict, target: list[int]) -> Run:
        """A Reshape target computed at each call from the record input's shape (host
        blocks: Shape, Gather, Mul, Add): an axis holding one free dim is that dim times
        what else it holds, an axis holding several is -1 (at most one such), the others
        as exported. For [T*B, 3E] -> [T, B, 3, E], where one -1 cannot do."""
        axes: dict[int, list] = {}
        for sym, (at, value) in places.items():
            axes.setdefault(reshaped(shape, at, target, value)[1][0], []).append(sym)
        pick, coef, const = [0] * len(target), [0] * len(target), list(target)
        merged = [j for j, syms in axes.items() if len(syms) > 1]
        if len(merged) > 1:
            raise FixedBatch(f"{node.label()}: {target} merges free dims in several axes")
        for j, syms in axes.items():
            axis, value = self.free[syms[0]]
            if len(syms) == 1 and target[j] % value == 0:
                pick[j], coef[j], const[j] = axis, target[j] // value, 0
            elif len(syms) > 1:
                const[j] = -1
            else:
                raise FixedBatch(f"{node.label()}: {target} splits {syms[0]}")
        x, base = next(iter(self.inputs)), f"{node.name or node.outputs[0]}_target"
        steps = [("Shape", None), ("Gather", pick), ("Mul", coef), ("Add", const)]
        src = x
        for op, arg in steps:
            args = ["in"] if arg is None else ["in", record_form(H.vector(arg))]
            attrs = {"axis": 0} if op == "Gather" else {}
            src = self.add(base, "onnx/op", [src], {"op": op, "attrs": attrs, "args": args}, {})
        return Run(src, on_host=True)
