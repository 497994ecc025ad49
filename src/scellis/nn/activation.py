"""torch.nn's activation modules beyond the catalog's (nn layer): each is its
functional twin (``_activations``) with torch's constructor; PReLU holds a
``weight`` (one value or one per channel, 0.25 to start, as torch)."""

from __future__ import annotations

from ..catalog.module import Module
from . import _activations as A
from ._home import constant_param
from ._inplace import write_back


class _Elementwise(Module):
    """A parameter-free activation: ``fn`` with the keyword arguments kept at init."""

    fn = staticmethod(A.selu)

    def __init__(self, inplace: bool = False, **options):
        super().__init__()
        object.__setattr__(self, "options", tuple(options))
        object.__setattr__(self, "inplace", bool(inplace))
        for name, value in options.items():  # torch's attributes: ``softmax.dim``
            object.__setattr__(self, name, value)

    def forward(self, x):
        out = type(self).fn(x, **{k: getattr(self, k) for k in self.options})
        return write_back(x, out, self.inplace, type(self).__name__.lower())

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in self.options)


class ELU(_Elementwise):
    fn = staticmethod(A.elu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(alpha=float(alpha), inplace=inplace)


class CELU(_Elementwise):
    fn = staticmethod(A.celu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(alpha=float(alpha), inplace=inplace)


class SELU(_Elementwise):
    fn = staticmethod(A.selu)

    def __init__(self, inplace: bool = False):
        super().__init__(inplace=inplace)


class Softplus(_Elementwise):
    fn = staticmethod(A.softplus)

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__(beta=float(beta), threshold=float(threshold))


class Mish(_Elementwise):
    fn = staticmethod(A.mish)

    def __init__(self, inplace: bool = False):
        super().__init__(inplace=inplace)


class Hardtanh(_Elementwise):
    fn = staticmethod(A.hardtanh)

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__(min_val=float(min_val), max_val=float(max_val), inplace=inplace)


class ReLU6(_Elementwise):
    fn = staticmethod(A.relu6)

    def __init__(self, inplace: bool = False):
        super().__init__(inplace=inplace)


class Hardsigmoid(_Elementwise):
    fn = staticmethod(A.hardsigmoid)

    def __init__(self, inplace: bool = False):
        super().__init__(inplace=inplace)


class Hardswish(_Elementwise):
    fn = staticmethod(A.hardswish)

    def __init__(self, inplace: bool = False):
        super().__init__(inplace=inplace)


class LogSigmoid(_Elementwise):
    fn = staticmethod(A.logsigmoid)


class Softsign(_Elementwise):
    fn = staticmethod(A.softsign)


class Tanhshrink(_Elementwise):
    fn = staticmethod(A.tanhshrink)


class Softshrink(_Elementwise):
    fn = staticmethod(A.softshrink)

    def __init__(self, lambd: float = 0.5):
        super().__init__(lambd=float(lambd))


class Hardshrink(_Elementwise):
    fn = staticmethod(A.hardshrink)

    def __init__(self, lambd: float = 0.5):
        super().__init__(lambd=float(lambd))


class GLU(_Elementwise):
    fn = staticmethod(A.glu)

    def __init__(self, dim: int = -1):
        super().__init__(dim=int(dim))


class Softmax(_Elementwise):
    """torch.nn.Softmax(dim=None)."""

    fn = staticmethod(A.softmax)

    def __init__(self, dim=None):
        super().__init__(dim=dim)


class Softmin(_Elementwise):
    fn = staticmethod(A.softmin)

    def __init__(self, dim=None):
        super().__init__(dim=dim)


class LogSoftmax(_Elementwise):
    fn = staticmethod(A.log_softmax)

    def __init__(self, dim=None):
        super().__init__(dim=dim)


class PReLU(Module):
    """torch.nn.PReLU(num_parameters=1, init=0.25): ``weight`` [num_parameters]."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = int(num_parameters)
        self.weight = constant_param((self.num_parameters,), float(init), device, dtype)

    def forward(self, x):
        return A.prelu(x, self.weight)


class Threshold(_Elementwise):
    """torch.nn.Threshold(threshold, value): x where x > threshold, else value."""

    fn = staticmethod(A.threshold)

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(threshold=float(threshold), value=float(value), inplace=inplace)


class Softmax2d(_Elementwise):
    """Softmax over the channels of [B, C, H, W] (or [C, H, W])."""

    fn = staticmethod(lambda x: A.softmax(x, -3))
