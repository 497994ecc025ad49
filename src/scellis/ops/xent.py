"""Softmax cross-entropy as one primitive (ops layer): the ``fast`` tier's training loss.

``softmax_xent(logits [R, C], target [R] integer, label_smoothing=e, ignore_index=i)``
is torch's mean cross-entropy over the rows whose target is not ``i``, and, in the
same pass, what its backward needs. Its flat result packs, in order:

* ``basis`` [R, C]: ``softmax(x) - (1 - e) onehot(t) - e / C`` per row, 0 on ignored
  rows: the logits' gradient up to the factor g / count;
* the row losses [R] (0 on ignored rows) and the rows' valid flags [R] (1.0 or 0.0);
* the mean loss, then ``1 / count`` (``LOSS``, ``INV_COUNT`` from the end).

Where the composite (``ops.composites.cross_entropy``) takes about twenty launches
forward and backward (log-softmax, gathers, masks, sums, their VJPs), this takes two
forward (the rows, one workgroup each, then the mean) and two backward (the factor,
the scaled basis): the logits' gradient is ``basis * (g / count)``.
"""

from __future__ import annotations

from ..base.errors import DTypeError, ShapeError
from .table import OpDef, Spec, register

LOSS, INV_COUNT = 2, 1  # positions from the end of the packed result


def packed_size(rows: int, classes: int) -> int:
    return rows * classes + 2 * rows + 2


def _infer(specs: list[Spec], attrs: dict) -> list[Spec]:
    x, t = specs
    if len(x.shape) != 2 or tuple(t.shape) != (x.shape[0],):
        raise ShapeError(f"softmax_xent: logits {x.shape} [R, C] and targets {t.shape} [R]")
    if x.dtype.name not in ("f32", "f64") or t.dtype.is_float:
        raise DTypeError(f"softmax_xent takes float logits and integer targets, got {x.dtype}, "
                         f"{t.dtype}")  # fmt: skip
    if not 0.0 <= float(attrs.get("label_smoothing", 0.0)) <= 1.0:
        raise ShapeError("softmax_xent: label_smoothing must lie in [0, 1]")
    return [Spec((packed_size(*x.shape),), x.dtype)]


register(
    OpDef(
        "softmax_xent",
        "reduce",
        2,
        _infer,
        attrs=("label_smoothing", "ignore_index"),
        diff_inputs=(0,),
        doc="mean softmax cross-entropy, packed with its gradient basis (ops/xent.py)",
    )
)
