"""VJP rules of the windows over time (autograd layer): each is the other's adjoint.

Both ops are linear in their input, so a rule reads no value (only the input's shape,
which an edge carries): the gradient of an unfold is the fold of its cotangent, and
the gradient of a fold is the unfold of its cotangent.
"""

from __future__ import annotations

from ..ops.unfold import WINDOW_ATTRS


def _window(attrs) -> dict:
    return {a: attrs[a] for a in WINDOW_ATTRS}


def _time_unfold(node, g):
    steps = node.inputs[0].shape[1]
    return (g.prim("time_fold", steps=steps, **_window(node.attrs)),)


def _time_fold(node, g):
    return (g.prim("time_unfold", **_window(node.attrs)),)


def _no_values(needs, attrs):
    return (False,)


UNFOLD_VJP = {"time_unfold": _time_unfold, "time_fold": _time_fold}
UNFOLD_READS = {"time_unfold": _no_values, "time_fold": _no_values}
