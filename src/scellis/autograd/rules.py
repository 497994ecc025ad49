"""VJP rules (autograd layer), keyed by op name: ``rule(node, g) -> grads per input``.

Rules are written with tensor methods only, so they run on every device and under
the tracer. ``node.saved`` holds ``out`` (the detached result) when the rule uses it.
A rule may return None for an input that needs no gradient.

``READS`` says which inputs' values a rule reads, given ``node.needs`` (and the attrs):
the node keeps only those tensors; every other input is an ``Edge`` with its shape and
dtype, so a rule must not read a value it does not declare (an edge has no data: the
rule fails at once rather than computing with something else). An op not listed reads
every input.
"""

from __future__ import annotations

import math

from .rules_attention import ATTENTION_READS as _ATTENTION_READS
from .rules_attention import ATTENTION_SAVES as _ATTENTION_SAVES
from .rules_attention import ATTENTION_VJP as _ATTENTION_VJP
from .rules_dense import DENSE_READS as _DENSE_READS
from .rules_dense import DENSE_SAVES as _DENSE_SAVES
from .rules_dense import DENSE_VJP as _DENSE_VJP
from .rules_loss import LOSS_READS as _LOSS_READS
from .rules_loss import LOSS_SAVES as _LOSS_SAVES
from .rules_loss import LOSS_VJP as _LOSS_VJP
from .rules_norm import NORM_READS as _NORM_READS
from .rules_norm import NORM_VJP as _NORM_VJP
from .rules_recurrent import RECURRENT_READS as _RECURRENT_READS
from .rules_recurrent import RECURRENT_SAVES as _RECURRENT_SAVES
from .rules_recurrent import RECURRENT_VJP as _RECURRENT_VJP
from .rules_unfold import UNFOLD_READS as _UNFOLD_READS
from .rules_unfold import UNFOLD_VJP as _UNFOLD_VJP

# ops whose rule reads the forward result: the runtime saves it as node.saved["out"]
SAVES_OUTPUT = frozenset({"exp", "sqrt", "rsqrt", "tanh", "sigmoid", "pow", "max", "min"})


def _x(node, i=0):
    return node.inputs[i]


def _out(node):
    return node.saved["out"]


def _gelu_tanh(node, g):
    return (_x(node).detach().prim("gelu_tanh_grad", g),)


def _gelu_erf(node, g):
    return (_x(node).detach().prim("gelu_erf_grad", g),)


def _silu(node, g):
    return (_x(node).detach().prim("silu_grad", g),)


def _softplus(node, g):
    x = _x(node).detach()
    return (g.where(x > 20.0, g * x.sigmoid()),)


def _clamp(node, g):
    x = _x(node).detach()
    lo, hi = node.attrs.get("lo"), node.attrs.get("hi")
    keep = None
    if lo is not None:
        keep = x >= lo
    if hi is not None:
        below = x <= hi
        keep = below if keep is None else keep.logical_and(below)
    return (g if keep is None else g.where(keep, 0.0),)


def _pow(node, g):
    a = _x(node, 0).detach()
    ga = gb = None
    if node.needs[0]:
        b = _x(node, 1).detach()
        ga = g * b * a.pow(b - 1.0)
    if node.needs[1]:
        # d/db a^b = a^b log a; defined as 0 where a == 0 (torch's convention)
        gb = (g * _out(node) * a.log()).where(a != 0.0, 0.0)
    return ga, gb


def _minmax_binary(pick_a):
    def rule(node, g):
        a, b = _x(node, 0).detach(), _x(node, 1).detach()
        wins = pick_a(a, b)
        tie = a == b
        half = g * 0.5
        ga = g.where(wins, half.where(tie, 0.0)) if node.needs[0] else None
        gb = half.where(tie, g).where(wins.logical_not(), 0.0) if node.needs[1] else None
        return ga, gb

    return rule


def _sum(node, g):
    x = _x(node)
    axes, keepdim = node.attrs["axes"], node.attrs["keepdim"]
    if not keepdim:
        g = g.reshape(tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    return (g.expand(x.shape),)


def _max_reduce(node, g):
    # gradient shared evenly between tied extrema, as torch.amax does
    x = _x(node).detach()
    axes = node.attrs["axes"]
    kshape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    out = _out(node).reshape(kshape)
    mask = (x == out.expand(x.shape)).cast(x.dtype)
    count = mask.sum(axes, keepdim=True)
    return (g.reshape(kshape).expand(x.shape) * mask / count.expand(x.shape),)


def _matmul(node, g):
    ga = g @ _x(node, 1).detach().mT if node.needs[0] else None
    gb = None
    if node.needs[1]:
        a = _x(node, 0).detach()
        # b read as a transposed view (a dense layer's x @ W^T): its gradient is made as
        # the transpose of g^T a, so the weight's own gradient comes out contiguous and
        # the optimizer's gather needs no copy of it
        gb = (g.mT @ a).mT if _transposed_2d(_x(node, 1)) and a.ndim == 2 else a.mT @ g
    return ga, gb


def _transposed_2d(x) -> bool:
    """Whether ``x`` (a tensor or an edge) is a 2-D view whose transpose is contiguous."""
    if len(x.shape) != 2 or min(x.shape) < 2:
        return False
    return tuple(x.strides) == (1, x.shape[0])


def _qmatmul(node, g):
    # the quantised weight is frozen: only the input gets a gradient, g @ W or g @ W^T;
    # with double-quantised scales (two more inputs) they are decoded again, not kept
    codes, *scales = (t.detach() for t in node.inputs[1:])
    attrs = {**node.attrs, "trans": not node.attrs["trans"]}
    scales = scales[0] if len(scales) == 1 else tuple(scales)
    return (g.qmatmul(codes, scales, **attrs), *(None for _ in node.inputs[1:]))


def _permute(node, g):
    perm = node.attrs["perm"]
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return (g.permute(inv),)


def _expand(node, g):
    x = _x(node)
    lead = len(g.shape) - len(x.shape)
    if lead:
        g = g.sum(tuple(range(lead)))
    axes = tuple(i for i, (a, b) in enumerate(zip(x.shape, g.shape)) if a == 1 and b != 1)
    if axes:
        g = g.sum(axes, keepdim=True)
    return (g,)


def _slice(node, g):
    x = _x(node)
    starts, steps = node.attrs["starts"], node.attrs["steps"]
    if g.numel == 0:  # x is not held (its value is not read): zeros of its shape from g
        return (g.new_zeros(x.shape),)
    hi = [d - (a + (n - 1) * s + 1) for d, a, n, s in zip(x.shape, starts, g.shape, steps)]
    return (g.pad(list(starts), hi, [s - 1 for s in steps]),)


def _pad(node, g):
    x = _x(node)
    lo, interior = node.attrs["lo"], node.attrs["interior"]
    stops = [
        a + max(d - 1, 0) * (i + 1) + (1 if d else 0) for d, a, i in zip(x.shape, lo, interior)
    ]
    return (g.slice(list(lo), stops, [i + 1 for i in interior]),)


def _concat(node, g):
    axis = node.attrs["axis"]
    out, at = [], 0
    for x in node.inputs:
        n = x.shape[axis]
        starts = [0] * len(g.shape)
        stops = list(g.shape)
        starts[axis], stops[axis] = at, at + n
        out.append(g.slice(starts, stops, [1] * len(g.shape)))
        at += n
    return tuple(out)


def _gather(node, g):
    x, idx = _x(node, 0), _x(node, 1)
    return g.scatter_add(idx, node.attrs["axis"], x.shape), None


def _scatter_add(node, g):
    return g.gather(_x(node, 1), node.attrs["axis"]), None


def _rsqrt(node, g):
    y = _out(node)
    return (g * y * y * y * -0.5,)


VJP = {
    "add": lambda n, g: (g, g),
    "sub": lambda n, g: (g, -g if n.needs[1] else None),  # a detached shift: no negation
    "mul": lambda n, g: (
        g * _x(n, 1).detach() if n.needs[0] else None,
        g * _x(n, 0).detach() if n.needs[1] else None,
    ),
    "div": lambda n, g: (
        g / _x(n, 1).detach() if n.needs[0] else None,
        -g * _x(n, 0).detach() / (_x(n, 1).detach() * _x(n, 1).detach()) if n.needs[1] else None,
    ),
    "pow": _pow,
    "maximum": _minmax_binary(lambda a, b: a > b),
    "minimum": _minmax_binary(lambda a, b: a < b),
    "neg": lambda n, g: (-g,),
    "exp": lambda n, g: (g * _out(n),),
    "log": lambda n, g: (g / _x(n).detach(),),
    "sqrt": lambda n, g: (g * 0.5 / _out(n),),
    "rsqrt": _rsqrt,
    "abs": lambda n, g: (g * _x(n).detach().sign(),),
    "relu": lambda n, g: (_x(n).detach().prim("relu_grad", g),),
    "tanh": lambda n, g: (g * (1.0 - _out(n) * _out(n)),),
    "sigmoid": lambda n, g: (g * _out(n) * (1.0 - _out(n)),),
    "gelu_tanh": _gelu_tanh,
    "gelu_erf": _gelu_erf,
    "silu": _silu,
    "softplus": _softplus,
    "erf": lambda n, g: (g * (_x(n).detach().square() * -1.0).exp() * (2.0 / math.sqrt(math.pi)),),
    "sin": lambda n, g: (g * _x(n).detach().cos(),),
    "cos": lambda n, g: (-g * _x(n).detach().sin(),),
    "clamp": _clamp,
    "cast": lambda n, g: (g.cast(_x(n).dtype),),
    "copy": lambda n, g: (g,),
    "where": lambda n, g: (
        None,
        g.where(_x(n, 0), 0.0) if n.needs[1] else None,
        g.masked_fill(_x(n, 0), 0.0) if n.needs[2] else None,  # one select, no negation
    ),
    # the unfused dropout's VJP takes the scale first, then the mask
    "masked_scale": lambda n, g: (
        g.prim("masked_scale", _x(n, 1).detach(), scale=n.attrs["scale"], grad_order=True),
        None,
    ),
    "sum": _sum,
    "max": _max_reduce,
    "min": _max_reduce,
    "matmul": _matmul,
    "qmatmul": _qmatmul,
    "permute": _permute,
    "expand": _expand,
    "reshape": lambda n, g: (g.reshape(_x(n).shape),),
    "slice": _slice,
    "pad": _pad,
    "concat": _concat,
    "gather": _gather,
    "scatter_add": _scatter_add,
}


def _none(needs, attrs):
    return (False,) * len(needs)


def _only(*which):
    def reads(needs, attrs):
        return tuple(i in which for i in range(len(needs)))

    return reads


def _other(needs, attrs):
    # d(a*b)/da reads b and d(a*b)/db reads a: a's value is needed only for b's gradient
    return needs[1], needs[0]


# which input values each rule reads: op -> (needs, attrs) -> one bool per input
READS = {
    # shape and dtype only (edges carry both), or the saved result instead of the input
    **{op: _none for op in ("add", "sub", "neg", "cast", "copy", "sum", "permute", "expand")},
    **{op: _none for op in ("reshape", "slice", "pad", "concat")},
    **{op: _none for op in ("exp", "sqrt", "rsqrt", "tanh", "sigmoid")},
    "mul": _other,
    "matmul": _other,
    "div": lambda needs, attrs: (needs[1], True),  # g / b; -g a / b^2
    "pow": lambda needs, attrs: (True, needs[0]),  # g b a^(b-1); g a^b log a
    "where": _only(0),  # the condition picks; the branches' values are not read
    "masked_scale": _only(1),
    # the codes and scales are read; the input is not (its gradient is g times the weight)
    "qmatmul": lambda needs, attrs: (False,) + (True,) * (len(needs) - 1),
    "gather": _only(1),  # the indices
    "scatter_add": _only(1),
}


def reads(op: str, needs: tuple[bool, ...], attrs: dict) -> tuple[bool, ...]:
    """Whether ``op``'s VJP reads each input's value, given which inputs need a gradient."""
    rule = READS.get(op)
    return (True,) * len(needs) if rule is None else tuple(rule(needs, attrs))


# fused recurrent layers, attention, norms and windows over time live in their own files;
# one table all the same
VJP.update(_RECURRENT_VJP)
VJP.update(_ATTENTION_VJP)
VJP.update(_NORM_VJP)
VJP.update(_DENSE_VJP)
VJP.update(_LOSS_VJP)
VJP.update(_UNFOLD_VJP)
READS.update(_RECURRENT_READS)
READS.update(_ATTENTION_READS)
READS.update(_NORM_READS)
READS.update(_DENSE_READS)
READS.update(_LOSS_READS)
READS.update(_UNFOLD_READS)
SAVES_OUTPUT = SAVES_OUTPUT | _RECURRENT_SAVES | _ATTENTION_SAVES | _DENSE_SAVES | _LOSS_SAVES
