"""torch's free functions (runtime layer): ``torch.tril(x)``, ``torch.einsum(...)``...

What a tutorial calls on the ``torch`` module itself. Most are the tensor method of
the same name (``torch.exp(x)`` is ``x.exp()``); the rest (``einsum``, ``bmm``,
``multinomial``, ``randperm``, ``Generator``) are written here over the methods and
the Philox streams, so ``scellis`` can stand where a script imports ``torch``.
"""

from __future__ import annotations

from ..base import rng as R
from ..base.dtypes import as_dtype
from ..base.errors import ShapeError
from ..ops.einsum import einsum  # noqa: F401 (re-exported as scellis.einsum)
from . import creation as C
from . import torch_free as F
from . import torch_more as M
from .tensor import Tensor
from .torch_free import *  # noqa: F403 (re-exported as scellis.<name>)
from .torch_more import *  # noqa: F403


def _method(name: str):
    def call(input, *args, **kwargs):  # noqa: A002 (torch's keyword)
        return getattr(input, name)(*args, **kwargs)

    call.__name__ = name
    call.__doc__ = f"``torch.{name}(x, ...)``: the tensor method ``x.{name}(...)``."
    return call


# torch.<name>(x, ...) == x.<name>(...)
_SAME_AS_METHOD = (
    "abs", "argmax", "argmin", "argsort", "clamp", "clone", "cos", "cumsum", "exp",
    "flatten", "gather", "kthvalue", "log", "log_softmax", "logsumexp", "masked_fill",
    "max", "mean", "min", "permute", "relu", "reshape", "sigmoid", "sin", "softmax",
    "sort", "sqrt", "squeeze", "std", "sum", "tanh", "topk", "transpose", "tril", "triu",
    "unsqueeze", "var", "amax", "amin", "rsqrt", "square", "sign", "neg", "erf",
    # elementwise beyond the primitives (``torch_math``)
    "floor", "ceil", "round", "trunc", "fix", "frac", "log1p", "expm1", "log2", "log10",
    "exp2", "sinh", "cosh", "tan", "atan", "arctan", "atan2", "arctan2", "asin", "arcsin",
    "acos", "arccos", "reciprocal", "xlogy", "isnan", "isinf", "isfinite",
    "nan_to_num", "div", "divide", "true_divide", "floor_divide", "remainder", "fmod",
    "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "heaviside",
    "add", "sub", "subtract", "mul", "multiply", "maximum", "minimum", "eq", "ne", "lt",
    "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
    "logical_xor", "bitwise_not",
    # reductions and scans (``torch_reduce``)
    "prod", "cumprod", "norm", "all", "any", "count_nonzero", "nansum", "nanmean",
    "aminmax", "median", "quantile",
    # movement, selection, scatter (``torch_shape``)
    "roll", "flip", "fliplr", "flipud", "narrow", "select", "unbind", "unflatten",
    "movedim", "moveaxis", "swapaxes", "swapdims", "index_select", "masked_select",
    "nonzero", "argwhere", "diagonal", "diag", "trace", "scatter", "scatter_add",
    "index_add", "index_fill", "ravel", "t", "split", "chunk", "repeat", "is_floating_point",
    "take",
)  # fmt: skip
globals().update({n: _method(n) for n in _SAME_AS_METHOD})
greater, less = _method("gt"), _method("lt")
__all__ = [*_SAME_AS_METHOD, "clip", "bmm", "einsum", "Generator", "randperm", "multinomial",
           "numel", "is_tensor", "greater", "less", *F.__all__, *M.__all__]  # fmt: skip
clip = _method("clamp")


def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    """Batched matmul of two 3-d tensors with the same batch (no broadcasting)."""
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ShapeError(f"bmm needs [b, n, m] and [b, m, p], got {input.shape} and {mat2.shape}")
    return input @ mat2


class Generator(R.Generator):
    """torch's ``Generator``: ``Generator().manual_seed(0)`` is a Philox stream of its
    own (draws differ from torch's Mersenne Twister; the seeding habit is the same)."""

    def __init__(self, device=None):
        super().__init__(0, "default")

    def manual_seed(self, seed: int) -> Generator:
        self.seed, self.step, self.draw = int(seed), 0, 0
        return self

    def initial_seed(self) -> int:
        return self.seed


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random order of ``0..n-1`` (i32): one Philox draw per element, ranked on the
    host (a shuffle's indices are wanted there anyway)."""
    keys = C.rand((int(n),), device, None, generator).tolist() if n else []
    order = sorted(range(int(n)), key=keys.__getitem__)
    return C.tensor(order, device=device, dtype=as_dtype(dtype, as_dtype("i32")))


def multinomial(input: Tensor, num_samples: int, replacement=False, *, generator=None) -> Tensor:  # noqa: A002
    """Class indices drawn by the weights of ``input``'s last dim ([C] or [B, C]).

    With replacement: each draw counts the running sums below a uniform draw (the
    inverse of the distribution function). Without: the ``num_samples`` largest of
    log(u) / w (an exponential race, which picks by weight without repeats)."""
    k = int(num_samples)
    rows = input if input.ndim == 2 else input.unsqueeze(0)
    b, n = rows.shape
    w = rows.cast("f32")
    if replacement:
        cdf = w.cumsum(1)
        u = C.rand((b, k), rows.device, None, generator) * cdf[:, n - 1 :]
        below = cdf.unsqueeze(1) <= u.unsqueeze(2)  # [b, k, n]
        out = below.sum(2).clamp(0, n - 1)
    else:
        if k > n:
            raise ShapeError(f"multinomial: {k} draws without replacement from {n} classes")
        u = C.rand((b, n), rows.device, None, generator)
        out = (u.log() / w).topk(k, 1).indices
    return out if input.ndim == 2 else out.squeeze(0)


def numel(input: Tensor) -> int:  # noqa: A002
    return int(input.numel)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)
