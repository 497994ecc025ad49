"""Host-tensor surgery for Hugging Face layouts (codecs layer): transpose, split, concatenate.

GPT-2 stores its projections as ``Conv1D`` weights [in, out] (the transpose of a
Linear's [out, in]) and packs q, k and v into one ``c_attn`` of 3E columns. These
helpers move bytes only (no arithmetic, any dtype), with strided memoryview slices so a
real checkpoint converts at C speed in the browser as natively.
"""

from __future__ import annotations

from ...base.errors import ScellisError
from ..raw import ITEMSIZE, RawTensor

_WORD = {1: "B", 2: "H", 4: "I", 8: "Q"}


def transpose(t: RawTensor) -> RawTensor:
    """The transpose of a 2-d tensor (same dtype)."""
    if len(t.shape) != 2:
        raise ScellisError(f"expected a 2-d tensor to transpose, got shape {list(t.shape)}")
    rows, cols = t.shape
    flat = memoryview(t.data).cast(_WORD[ITEMSIZE[t.dtype][0]])
    data = b"".join(flat[j::cols].tobytes() for j in range(cols))
    return RawTensor(t.dtype, (cols, rows), data)


def split_rows(t: RawTensor, sizes, what: str = "a tensor") -> list[RawTensor]:
    """``t`` cut along its first axis into pieces of ``sizes`` rows."""
    if sum(sizes) != t.shape[0]:
        raise ScellisError(
            f"cannot split {what} of {t.shape[0]} rows into {list(sizes)} "
            "(does config.json describe these weights?)"
        )
    row = len(t.data) // t.shape[0] if t.shape[0] else 0
    out, at = [], 0
    for n in sizes:
        out.append(RawTensor(t.dtype, (n, *t.shape[1:]), t.data[at * row : (at + n) * row]))
        at += n
    return out


def cat_rows(ts: list[RawTensor]) -> RawTensor:
    """Tensors of one dtype and equal trailing shape, joined along their first axis."""
    first = ts[0]
    if any(t.dtype != first.dtype or t.shape[1:] != first.shape[1:] for t in ts):
        raise ScellisError("cannot concatenate tensors of different dtypes or trailing shapes")
    n = sum(t.shape[0] for t in ts)
    return RawTensor(first.dtype, (n, *first.shape[1:]), b"".join(t.data for t in ts))
