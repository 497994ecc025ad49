"""VJP rule of the fused row norm (autograd layer): one backward primitive, then sums.

``row_norm_backward`` gives dx and, when the weight needs a gradient, g * xhat in one
flat buffer; the weight's and the bias's gradients are column sums over the rows (the
reduction's deterministic column path), of g * xhat and of g itself.
"""

from __future__ import annotations


def _row_norm(node, g):
    x = node.inputs[0]
    has_weight, has_bias = node.attrs["weight"], node.attrs["bias"]
    weight = node.inputs[1] if has_weight else None
    weight_grad = has_weight and node.needs[1]
    extra = (weight.detach(),) if has_weight else ()
    flat = x.detach().prim(
        "row_norm_backward",
        g,
        *extra,
        eps=node.attrs["eps"],
        rms=node.attrs["rms"],
        weight=has_weight,
        weight_grad=weight_grad,
    )
    n = x.numel
    dx = flat[0:n].reshape(x.shape) if node.needs[0] else None
    dweight = _over_rows(flat[n : 2 * n].reshape(x.shape)) if weight_grad else None
    grads = [dx] + ([dweight] if has_weight else [])
    if has_bias:
        grads.append(_over_rows(g) if node.needs[-1] else None)
    return tuple(grads)


def _over_rows(t):
    """t summed over every axis but the last (a 1-D t is one row: itself)."""
    return t.sum(tuple(range(t.ndim - 1))) if t.ndim > 1 else t


def _row_norm_reads(needs, attrs):
    # x and the weight are read; the bias's gradient is a sum of g alone
    return (True,) * (len(needs) - 1) + (not attrs["bias"],)


NORM_VJP = {"row_norm": _row_norm}
NORM_READS = {"row_norm": _row_norm_reads}
