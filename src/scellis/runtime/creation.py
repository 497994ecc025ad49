"""Creating tensors (runtime layer) from host data, constants and Philox draws."""

from __future__ import annotations

import array
import struct

from ..base.dtypes import DType, as_dtype, bool_, f32, f64, i32
from ..base.errors import ScellisError, ShapeError
from ..base.rng import Generator
from ..base.shapes import contiguous_strides, numel
from ..devices.base import get_device
from .dispatch import apply, default_device
from .tensor import Tensor

# numpy dtype names reach us by duck typing; numpy itself is never imported here
_ARRAY_DTYPES = {
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "int32": "i32",
    "int64": "i32",
    "int16": "i32",
    "int8": "i32",
    "uint8": "i32",
    "uint32": "u32",
    "bool": "bool",
}


def _flatten(data, shape: list, depth: int, out: list) -> None:
    if isinstance(data, Tensor) or hasattr(data, "__array_interface__"):
        data = data.tolist()  # rows that are arrays or tensors: torch.tensor([a, b])
    if isinstance(data, (list, tuple)):
        if len(shape) <= depth:
            shape.append(len(data))
        elif shape[depth] != len(data):
            raise ShapeError("nested lists are ragged: every row must have the same length")
        for x in data:
            _flatten(x, shape, depth + 1, out)
        return
    if len(shape) > depth:
        raise ShapeError("nested lists are ragged: a number where a list was expected")
    out.append(data)


def _kind_of(values: list) -> DType:
    if all(isinstance(v, bool) for v in values) and values:
        return bool_
    if all(isinstance(v, int) for v in values) and values:
        return i32
    return f32


def encode(values: list, dtype: DType) -> bytes:
    if dtype.code == "e":
        return struct.pack(f"<{len(values)}e", *values)
    if dtype.kind == "f":
        return array.array(dtype.code, [float(v) for v in values]).tobytes()
    if dtype.kind == "b":
        return bytes(1 if v else 0 for v in values)
    return array.array(dtype.code, [int(v) for v in values]).tobytes()


def from_bytes(data: bytes, shape, dtype: DType, device=None, requires_grad=False) -> Tensor:
    dev = get_device(device) if device is not None else default_device()
    shape = tuple(shape)
    n = numel(shape)
    if not dev.supports(dtype):
        raise ScellisError(f"device {dev.name!r} does not support {dtype}")
    buf = dev.alloc(n, dtype)
    dev.upload(buf, data)
    t = Tensor(buf, shape, contiguous_strides(shape), 0, dtype, dev)
    if requires_grad:
        t.requires_grad_()
    return t


def tensor(data, device=None, dtype=None, requires_grad: bool = False) -> Tensor:
    """A tensor from nested lists, a number, another Tensor or an array-like."""
    dt = as_dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        dt = dt or data.dtype
        data = data.tolist()
    if hasattr(data, "__array_interface__") and hasattr(data, "astype"):
        name = _ARRAY_DTYPES.get(str(data.dtype))
        if name is None:
            raise ScellisError(f"arrays of dtype {data.dtype} cannot become tensors")
        dt = dt or as_dtype(name)
        host = {
            "f16": "float16",
            "f32": "float32",
            "f64": "float64",
            "i32": "int32",
            "u32": "uint32",
            "bool": "bool",
        }[dt.name]
        raw = data.astype(host).tobytes(order="C")
        return from_bytes(raw, data.shape, dt, device, requires_grad)
    shape: list[int] = []
    values: list = []
    _flatten(data, shape, 0, values)
    dt = dt or _kind_of(values)
    return from_bytes(encode(values, dt), shape, dt, device, requires_grad)


def full(shape, value, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dt = as_dtype(dtype, f32)
    dev = get_device(device) if device is not None else default_device()
    t = apply("full", (), device=dev, shape=shape, value=value, dtype=dt.name)
    return t.requires_grad_() if requires_grad else t


def zeros(shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(shape, 0, dtype, device, requires_grad)


def ones(shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(shape, 1, dtype, device, requires_grad)


def arange(n: int, dtype=None, device=None) -> Tensor:
    dev = get_device(device) if device is not None else default_device()
    return apply("arange", (), device=dev, n=int(n), dtype=as_dtype(dtype, i32).name)


_generators: dict[str, Generator] = {}


def manual_seed(seed: int) -> None:
    """Reset every named stream of the eager API to ``seed``, step 0, draw 0."""
    _generators.clear()
    _generators["seed"] = Generator(int(seed), "default")


def stream_state() -> dict:
    """The eager streams' seeds and positions (a copy), for ``set_stream_state``."""
    return {k: Generator(g.seed, g.name, g.step, g.draw) for k, g in _generators.items()}


def set_stream_state(state: dict) -> None:
    _generators.clear()
    _generators.update({k: Generator(g.seed, g.name, g.step, g.draw) for k, g in state.items()})


def generator(name: str = "default") -> Generator:
    base = _generators.setdefault("seed", Generator(0, "default"))
    if name not in _generators:
        _generators[name] = Generator(base.seed, name)
    return _generators[name]


def rand(shape, device=None, dtype=None, gen: Generator | None = None) -> Tensor:
    """Uniform [0, 1) draws from a Philox stream (the next draw of ``gen``)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    g = gen or generator("default")
    key, draw, step = g.next_draw()
    dev = get_device(device) if device is not None else default_device()
    t = apply("rand_uniform", (), device=dev, shape=shape, key=key, draw=draw, step=step)
    dt = as_dtype(dtype, f32)
    return t if dt == f32 else t.cast(dt)


def randn(shape, device=None, dtype=None, gen: Generator | None = None) -> Tensor:
    """Standard normal draws by Box-Muller over two Philox uniform draws."""
    u1 = rand(shape, device, f32, gen)
    u2 = rand(shape, device, f32, gen)
    r = ((1.0 - u1).log() * -2.0).sqrt()
    z = r * (u2 * 6.283185307179586).cos()
    dt = as_dtype(dtype, f32)
    return z if dt == f32 else z.cast(dt)


__all__ = [
    "tensor",
    "full",
    "zeros",
    "ones",
    "arange",
    "rand",
    "randn",
    "manual_seed",
    "generator",
    "from_bytes",
    "f64",
]
