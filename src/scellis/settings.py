"""torch's process-wide switches a script sets at the top (re-exports and small state).

``set_num_threads``/``get_num_threads``, ``set_printoptions``,
``use_deterministic_algorithms``, ``set_float32_matmul_precision`` and the default
dtype. The engine runs its kernels on one device queue, in a fixed order, from
Philox streams, so the thread count and the deterministic switch change nothing (they
are kept, and read back as set). The default dtype is float32 and stays so: another
one is refused with the alternative, rather than creating tensors that differ.
"""

from __future__ import annotations

from .base.dtypes import as_dtype, f32
from .base.errors import ScellisError


class UnsupportedName(ScellisError, AttributeError):
    """A torch name with no counterpart here: a ScellisError that says what to use
    instead, and an AttributeError, so ``hasattr(scellis, name)`` is False."""


_state = {"threads": 1, "deterministic": False, "matmul_precision": "highest", "print": {}}


def set_num_threads(n: int) -> None:
    if int(n) < 1:
        raise ScellisError(f"set_num_threads needs a positive count, got {n}")
    _state["threads"] = int(n)


def get_num_threads() -> int:
    return _state["threads"]


def set_num_interop_threads(n: int) -> None:
    set_num_threads(n)


def get_num_interop_threads() -> int:
    return _state["threads"]


def get_default_dtype():
    return f32


def set_default_dtype(d) -> None:
    if as_dtype(d) != f32:
        raise ScellisError(
            f"set_default_dtype({d}) is not supported: the default stays float32; pass "
            f"dtype={d} to each factory (scellis.zeros(..., dtype=...)) or cast with .to()"
        )


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:  # fmt: skip
    """Kept for scripts that set it; a tensor's repr lists its values in full."""
    _state["print"] = {k: v for k, v in locals().items() if v is not None}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Every kernel here runs in a fixed order, so results repeat with or without it."""
    _state["deterministic"] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def set_float32_matmul_precision(precision: str) -> None:
    if precision not in ("highest", "high", "medium"):
        raise ScellisError(f"precision is 'highest', 'high' or 'medium', not {precision!r}")
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _state["matmul_precision"]


__all__ = [
    "set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads",
    "get_default_dtype", "set_default_dtype", "set_printoptions", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "set_float32_matmul_precision",
    "get_float32_matmul_precision",
]  # fmt: skip
