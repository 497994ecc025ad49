"""Dtypes (base layer): names, sizes, host packing codes and promotion, no NumPy."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DTypeError


@dataclass(frozen=True)
class DType:
    name: str
    itemsize: int  # bytes per element in the host byte layout
    code: str  # struct/array format character of the host layout
    kind: str  # 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_floating_point(self) -> bool:  # torch's name
        return self.kind == "f"

    # every op compares dtypes and keys caches by them: the same object is the common
    # case, and the name alone decides the rest (the other fields follow from it)
    def __eq__(self, other):
        if self is other:
            return True
        if type(other) is not DType:
            return NotImplemented
        return self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"scellis.{self.name}"

    def __str__(self) -> str:
        return self.name


f16 = DType("f16", 2, "e", "f")
f32 = DType("f32", 4, "f", "f")
f64 = DType("f64", 8, "d", "f")
i32 = DType("i32", 4, "i", "i")
u32 = DType("u32", 4, "I", "u")
bool_ = DType("bool", 1, "B", "b")

ALL = {d.name: d for d in (f16, f32, f64, i32, u32, bool_)}
_ALIASES = {
    "float16": f16,
    "half": f16,
    "float32": f32,
    "float": f32,
    "float64": f64,
    "double": f64,
    "int32": i32,
    "int": i32,
    "uint32": u32,
    "bool_": bool_,
}
# torch's 64-bit integers: stored as i32 (WGSL has no i64), said once per process
_WIDE_INTS = ("int64", "long")
_said: set[str] = set()


def narrowed_int(name: str = "int64") -> DType:
    """i32 standing for torch's ``int64``/``long``, with one warning the first time."""
    if "int64" not in _said:
        _said.add("int64")
        import warnings

        warnings.warn(
            f"scellis stores {name} as i32 (32-bit): WebGPU has no 64-bit integers; "
            "values beyond +-2^31 do not fit",
            stacklevel=3,
        )
    return i32


# Promotion order for floats; integers promote to the float they meet.
_FLOAT_RANK = {"f16": 0, "f32": 1, "f64": 2}


def as_dtype(d: DType | str | None, default: DType = f32) -> DType:
    if d is None:
        return default
    if isinstance(d, DType):
        return d
    if isinstance(d, str):
        if d in _WIDE_INTS:
            return narrowed_int(d)
        found = ALL.get(d) or _ALIASES.get(d)
        if found:
            return found
    raise DTypeError(f"unknown dtype {d!r}; expected one of {', '.join(ALL)}")


def promote(a: DType, b: DType) -> DType:
    """Result dtype of a binary op between tensors of dtypes ``a`` and ``b``."""
    if a == b:
        return a
    if a.is_float and b.is_float:
        return a if _FLOAT_RANK[a.name] > _FLOAT_RANK[b.name] else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    if bool_ in (a, b):
        return b if a == bool_ else a
    return i32  # i32 with u32: signed wins, as WGSL needs one type
