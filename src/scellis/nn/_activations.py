"""torch.nn.functional's elementwise activations and softmax variants (nn layer).

Each is composed of the engine's differentiable ops, so autograd and every device come
for free; the formulas (and where torch switches branches, e.g. softplus's threshold)
are torch's, so values and gradients match it away from the kinks.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..ops import composites as C
from ..runtime.creation import generator, rand
from ..runtime.tensor import Tensor
from ._inplace import honours_inplace

# torch's SELU constants (Klambauer et al. 2017)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@honours_inplace
def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return x.where(x > 0, (x.exp() - 1.0) * alpha)


@honours_inplace
def celu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return x.where(x > 0, ((x * (1.0 / alpha)).exp() - 1.0) * alpha)


@honours_inplace
def selu(x: Tensor, inplace: bool = False) -> Tensor:
    return elu(x, SELU_ALPHA) * SELU_SCALE


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (torch's)."""
    bx = x * beta if beta != 1.0 else x
    soft = bx.softplus() * (1.0 / beta) if beta != 1.0 else bx.softplus()
    return x.where(bx > threshold, soft)


@honours_inplace
def mish(x: Tensor, inplace: bool = False) -> Tensor:
    return x * softplus(x).tanh()


@honours_inplace
def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace=False) -> Tensor:
    return x.clamp(min_val, max_val)


@honours_inplace
def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    return x.clamp(0.0, 6.0)


@honours_inplace
def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    return (x + 3.0).clamp(0.0, 6.0) * (1.0 / 6.0)


@honours_inplace
def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    return x * hardsigmoid(x)


def logsigmoid(x: Tensor) -> Tensor:
    return -((-x).softplus())


def softsign(x: Tensor) -> Tensor:
    return x / (x.abs() + 1.0)


def tanhshrink(x: Tensor) -> Tensor:
    return x - x.tanh()


def softshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    return (x - lambd).where(x > lambd, (x + lambd).where(x < -lambd, x * 0.0))


def hardshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    return x.where(x.abs() > lambd, x * 0.0)


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x; ``weight`` one value or one per channel (axis 1)."""
    w = weight
    if weight.numel > 1:
        if x.ndim < 2 or x.shape[1] != weight.numel:
            raise ScellisError(f"prelu: {weight.numel} weights need {weight.numel} channels on "
                               f"axis 1, got input {x.shape}")  # fmt: skip
        w = weight.reshape((1, weight.numel) + (1,) * (x.ndim - 2))
    return x.where(x > 0, x * w)


def glu(x: Tensor, dim: int = -1) -> Tensor:
    n = x.shape[dim]
    if n % 2:
        raise ScellisError(f"glu: dim {dim} must have an even size, got {n}")
    a, b = x.split(n // 2, dim)
    return a * b.sigmoid()


def _softmax_dim(ndim: int) -> int:
    """torch's implicit softmax axis (deprecated there, kept for old scripts)."""
    return 0 if ndim in (0, 1, 3) else 1


def _cast(x: Tensor, dtype):
    return x if dtype is None else x.to(dtype)


def softmax(x: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return C.softmax(_cast(x, dtype), _softmax_dim(x.ndim) if dim is None else dim)


def softmin(x: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return softmax(-_cast(x, dtype), dim)


def log_softmax(x: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return C.log_softmax(_cast(x, dtype), _softmax_dim(x.ndim) if dim is None else dim)


@honours_inplace
def threshold(x: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    return x.where(x > threshold, x * 0.0 + value)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:  # fmt: skip
    """softmax((logits + g) / tau) with Gumbel(0, 1) noise g = -log(E), E ~ Exp(1) from
    the Philox ``default`` stream; ``hard``: the one-hot argmax in the forward with the
    soft sample's gradient (straight through), as torch's."""
    u = rand(logits.shape, logits.device, logits.dtype, generator("default"))
    gumbels = -((-(1.0 - u).log()).log())
    y = C.softmax((logits + gumbels) * (1.0 / tau), dim)
    if not hard:
        return y
    d = dim % y.ndim
    idx = y.argmax(d, keepdim=True)
    classes = y.arange_like(y.shape[d]).reshape(
        tuple(y.shape[d] if a == d else 1 for a in range(y.ndim))
    )
    one_hot = (classes == idx).cast(y.dtype)
    return one_hot - y.detach() + y
