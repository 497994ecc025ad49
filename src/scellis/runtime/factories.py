"""Creating tensors with torch's signatures (runtime layer): ``zeros(2, 3)``, ``arange(0, 5)``.

The public ``scellis.zeros/ones/full/arange/rand/randn`` are these. Sizes come as
separate ints or one tuple (``zeros(2, 3)`` and ``zeros((2, 3))`` agree); dtype,
device and requires_grad are keywords; ``generator=`` (or ``gen=``) picks the Philox
stream of random draws. ``"cpu"`` names the reference device. The engine's own
``runtime.creation`` functions keep their positional forms for internal callers.
"""

from __future__ import annotations

import math

from ..base.dtypes import as_dtype, f32, i32
from ..base.errors import ScellisError
from . import creation as C
from .tensor import Tensor


def _size(size, keyword=None) -> tuple[int, ...]:
    if keyword is not None:  # torch's size= keyword: zeros(size=(2, 3))
        if size:
            raise ScellisError("give the size once: as arguments or as size=")
        size = (keyword,)
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    if not all(isinstance(d, int) and d >= 0 for d in size):
        raise ScellisError(f"sizes are non-negative ints, got {size!r}")
    return tuple(size)


def _grad(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_() if requires_grad else t


def zeros(*size, dtype=None, device=None, requires_grad=False, **kw) -> Tensor:
    return C.full(_size(size, _size_kw(kw)), 0, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **kw) -> Tensor:
    return C.full(_size(size, _size_kw(kw)), 1, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, **kw) -> Tensor:
    """Zeros: storage is always initialised here."""
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad, **kw)


def _size_kw(kw: dict):
    """torch's ``size=`` keyword, and its ``out=``/``layout=``/``pin_memory=`` refused
    or ignored as they mean nothing here."""
    size = kw.pop("size", None)
    kw.pop("pin_memory", None)
    kw.pop("layout", None)
    if kw:
        raise ScellisError(f"unexpected keyword(s) {sorted(kw)}")
    return size


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    size = (size,) if isinstance(size, int) else tuple(size)
    if dtype is None and isinstance(fill_value, bool):
        dtype = "bool"
    elif dtype is None and isinstance(fill_value, int):
        dtype = i32
    return C.full(size, fill_value, dtype, device, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``[start, end)`` by ``step``; i32 when every bound is an int, else f32 (torch's
    int64 and default float)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ScellisError("arange: step must not be zero")
    n = max(0, math.ceil((end - start) / step))
    ints = all(isinstance(v, int) for v in (start, end, step))
    dt = as_dtype(dtype, i32 if ints else f32)
    t = C.arange(n, i32, device)
    if step != 1 or start != 0:
        t = t.cast(dt if dt.is_float else i32) * step + start
    return _grad(t.cast(dt) if t.dtype != dt else t, requires_grad)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = as_dtype(dtype, f32)
    t = C.arange(steps, dt, device)
    if steps > 1:
        t = t * ((end - start) / (steps - 1)) + start
    else:
        t = t + start
    return _grad(t, requires_grad)


def _stream(generator, gen):
    return generator if generator is not None else gen


def rand(*size, generator=None, gen=None, dtype=None, device=None, requires_grad=False):
    """Uniform [0, 1) from a Philox stream (``generator``, else the eager default)."""
    t = C.rand(_size(size), device, dtype, _stream(generator, gen))
    return _grad(t, requires_grad)


def randn(*size, generator=None, gen=None, dtype=None, device=None, requires_grad=False):
    """Standard normal from a Philox stream (``generator``, else the eager default)."""
    t = C.randn(_size(size), device, dtype, _stream(generator, gen))
    return _grad(t, requires_grad)


def randint(low, high=None, size=(), *, generator=None, dtype=None, device=None) -> Tensor:
    """Integers uniform in ``[low, high)`` (``randint(high, size)`` starts at 0)."""
    if high is None:
        low, high = 0, low
    elif not isinstance(high, int) and not size:  # torch's randint(high, size)
        low, high, size = 0, low, high
    u = C.rand(tuple(size), device, f32, generator)
    # the product is >= 0, where the cast's truncation is the floor
    t = (u * float(high - low)).cast(i32) + low
    return t.cast(as_dtype(dtype)) if dtype is not None else t


def zeros_like(t: Tensor, *, dtype=None, requires_grad=False) -> Tensor:
    return _grad(t.zeros_like(dtype), requires_grad)


def ones_like(t: Tensor, *, dtype=None, requires_grad=False) -> Tensor:
    return _grad(t.ones_like(dtype), requires_grad)


def full_like(t: Tensor, fill_value, *, dtype=None, requires_grad=False) -> Tensor:
    return _grad(t.full_like(fill_value, dtype), requires_grad)


def rand_like(t: Tensor, *, generator=None, dtype=None) -> Tensor:
    return rand(t.shape, generator=generator, dtype=dtype or t.dtype, device=t.device)


def randn_like(t: Tensor, *, generator=None, dtype=None) -> Tensor:
    return randn(t.shape, generator=generator, dtype=dtype or t.dtype, device=t.device)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones on the diagonal of an ``n`` x ``m`` matrix (``m`` defaults to ``n``)."""
    m = n if m is None else m
    rows = arange(n, device=device).reshape((n, 1))
    cols = arange(m, device=device).reshape((1, m))
    return _grad((rows == cols).cast(as_dtype(dtype, f32)), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor: the tensor itself when it already has that dtype and device
    (torch's no-copy case), else a new one."""
    if isinstance(data, Tensor):
        same_dtype = dtype is None or as_dtype(dtype) == data.dtype
        if same_dtype and (device is None or data.device.name == device):
            return data
        return data.to(device=device or data.device, dtype=dtype)
    return C.tensor(data, device, dtype)


def from_numpy(array) -> Tensor:
    """A tensor with the array's values on the reference device. Unlike torch's, it is a
    copy: the two do not share memory (device storage is the engine's)."""
    return C.tensor(array, "reference")
