"""torch.linalg's norms (``vector_norm``, ``matrix_norm``, ``norm``) over tensor ops.

Decompositions (``inv``, ``solve``, ``det``, ``svd``, ``qr``, ``eigh``...) have no
kernels here; naming one raises a ScellisError that says so.
"""

from __future__ import annotations

from .settings import UnsupportedName


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    return x.norm(ord, dim, keepdim, dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: N803
    """The Frobenius norm over ``dim`` (the spectral and nuclear norms need an SVD)."""
    if ord != "fro":
        raise UnsupportedName(f"matrix_norm(ord={ord!r}) needs an SVD; ord='fro' is supported")
    return A.norm("fro", tuple(dim), keepdim, dtype)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: N803
    """torch.linalg.norm: a vector 2-norm by default (of every element when ``dim`` is None
    and ``ord`` too), the Frobenius norm for ``ord='fro'``."""
    if ord is None or ord == "fro":
        return A.norm("fro", dim, keepdim, dtype)
    if isinstance(dim, (tuple, list)) and len(dim) == 2:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise UnsupportedName(
        f"scellis.linalg.{name} is not supported (no decomposition kernels); the norms "
        "(norm, vector_norm, matrix_norm) and vecdot are"
    )
