"""Which kernels a step may use (runtime layer): the determinism tier's kernel choice.

A tier (``train.determinism``) names a ``KernelChoice``; the train loop sets it around
each step it runs or records (``choosing``), and the few places that have a second
kernel read it (``current``): ``primitive.run_primitive`` marks the ops that may run
in a reordered form (``REORDERABLE``: a split-K matmul, a one-pass sum) with the
``_order`` attr, the
dense block picks the fused dense + activation op, the optimizer its multi-tensor
update. Outside a step (and on ``debug``) the choice is ``FIXED``: every kernel sums in
the one fixed order that makes a run bitwise repeatable, and nothing is fused.

A recorded step keeps the kernels that ran while it was recorded, so a replayed step
runs the tier's kernels without asking again.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class KernelChoice:
    # other summation orders than debug's: K split into parts summed after (matmul), a
    # sum's terms folded in one launch instead of chunks and their sum (reduce)
    reordered: bool = False
    # fused training kernels: dense + bias + activation with its fused backward, and one
    # optimizer dispatch that reads every parameter's gradient where it lies
    fused_training: bool = False


FIXED = KernelChoice()

# ops whose kernel has a reordered form, and the ``_order`` value that asks for it
REORDERABLE = {"matmul": "split_k", "sum": "one_pass"}

_current: ContextVar[KernelChoice] = ContextVar("kernel_choice", default=FIXED)


def current() -> KernelChoice:
    return _current.get()


@contextlib.contextmanager
def choosing(choice: KernelChoice):
    """Run the block's device work under ``choice`` (sync code only: an ``await`` inside
    would leak the choice into whatever else runs meanwhile)."""
    token = _current.set(choice)
    try:
        yield
    finally:
        _current.reset(token)


def with_order(op: str, attrs: dict) -> dict:
    """``attrs`` with the reordered form asked for where the current choice allows it."""
    order = REORDERABLE.get(op)
    if order is None or not _current.get().reordered or "_order" in attrs:
        return attrs
    return {**attrs, "_order": order}
