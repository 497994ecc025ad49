"""torch's ``finfo``/``iinfo``: the limits of a dtype (``torch.finfo(torch.float32).eps``)."""

from __future__ import annotations

from dataclasses import dataclass

from .base.dtypes import as_dtype
from .base.errors import ScellisError

# name -> (bits, eps, max, tiny (smallest normal), resolution)
_FLOATS = {
    "f16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
    "f32": (32, 1.1920928955078125e-07, 3.4028234663852886e38, 1.1754943508222875e-38, 1e-06),
    "f64": (64, 2.220446049250313e-16, 1.7976931348623157e308, 2.2250738585072014e-308, 1e-15),
}
_INTS = {"i32": (32, -(2**31), 2**31 - 1), "u32": (32, 0, 2**32 - 1), "bool": (8, 0, 1)}


@dataclass(frozen=True)
class finfo:  # noqa: N801 (torch's name)
    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str

    def __new__(cls, dtype=None):
        return object.__new__(cls)

    def __init__(self, dtype=None):
        dt = as_dtype(dtype)
        if dt.name not in _FLOATS:
            raise ScellisError(f"finfo takes a float dtype, not {dt}; use iinfo")
        bits, eps, big, tiny, res = _FLOATS[dt.name]
        for k, v in dict(bits=bits, eps=eps, max=big, min=-big, tiny=tiny,
                         smallest_normal=tiny, resolution=res, dtype=dt.name).items():  # fmt: skip
            object.__setattr__(self, k, v)


@dataclass(frozen=True)
class iinfo:  # noqa: N801
    bits: int
    min: int
    max: int
    dtype: str

    def __new__(cls, dtype):
        return object.__new__(cls)

    def __init__(self, dtype):
        dt = as_dtype(dtype)
        if dt.name not in _INTS:
            raise ScellisError(f"iinfo takes an integer dtype, not {dt}; use finfo")
        bits, lo, hi = _INTS[dt.name]
        for k, v in dict(bits=bits, min=lo, max=hi, dtype=dt.name).items():
            object.__setattr__(self, k, v)
