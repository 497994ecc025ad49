"""Where the batch lives in an ONNX graph exported at fixed shapes (codecs layer).

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
"""

from __future__ import annotations

import math

from ...base.errors import ScellisError
from ...catalog.blocks.onnx_op import host as H

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


class BatchFree:
    """The op-level importer's side of this (``GraphImporter`` mixes it in): ``batch``
    (the exported batch, 0 when the graph keeps it), ``probe``/``probe2`` (each block's
    output on the shapes-only device at that batch and at one more) and ``batch_at``
    (each block's batch place)."""

    def _probe_other_batch(self, name: str, mod, ins: list[str], at) -> None:
        try:
            got = mod(*[self.probe2[i] for i in ins])
        except ScellisError as e:
            raise FixedBatch(f"{name}: {e}") from None
        self.probe2[name] = got
        axis = changed_axis(tuple(self.probe[name].shape), tuple(got.shape))
        if at == "flat":  # a reshape: the batch's flat place, found in the output's shape
            src = ins[0]
            moved = reshaped(tuple(self.probe[src].shape), self.batch_at[src],
                                list(self.probe[name].shape), self.batch)  # fmt: skip
            at = moved[1] if moved else None
        elif at is None and axis is not None:
            outer = next((self.batch_at[i][1] for i in ins if i in self.batch_at), 1)
            at = (axis, outer)
        if at is not None and at[0] == axis:
            self.batch_at[name] = at

    def _batch_free(self, node, k: int, v, src: str | None):
        """A constant operand of ``node`` rewritten to follow the batch of its model
        tensor ``src`` (see ``batch``); ``v`` unchanged when no batch is involved."""
        at = self.batch_at.get(src) if src else None
        if at is None or not isinstance(v, H.Host):
            return v
        shape = tuple(self.probe[src].shape)
        if node.op == "Reshape" and k == 1:
            target = H.reshape_target(shape, v.ints(), bool(node.attrs.get("allowzero", 0)))
            got = reshaped(shape, at, list(target), self.batch)
            if got is None:
                raise FixedBatch(f"{node.label()}: no axis of {list(target)} holds the batch")
            return H.vector(got[0])
        if node.op == "Expand" and k == 1:
            got = expanded(shape, at, v.ints(), self.batch)
            if got is None:
                raise FixedBatch(f"{node.label()}: Expand to {v.ints()} changes the batch")
            return H.vector(got)
        if node.op in BROADCASTS and len(v.shape) >= len(shape) - at[0] > 0:
            axis = at[0] + len(v.shape) - len(shape)
            if v.shape[axis] != self.batch:
                return v
            cut = one_entry(v, axis, self.batch)
            if cut is None:
                raise FixedBatch(f"{node.label()}: a constant differs between batch entries")
            return cut
        return v
