"""einsum (ops layer): Einstein summation as a composite over primitives.

Two operands whose spec is a plain contraction become one batched matmul (what the
attention scores of tutorials write); anything else lines every operand up on the
letters of the whole expression, multiplies them broadcast and sums the letters the
output lacks. Both are permutes, reshapes, multiplies, sums and matmul, so the
gradient comes from those primitives' VJPs.
"""

from __future__ import annotations

from ..base.errors import ShapeError


def _parse(spec: str, n: int) -> tuple[list[str], str]:
    spec = spec.replace(" ", "")
    if "." in spec:
        raise ShapeError("einsum: '...' is not supported; name every dim with a letter")
    lhs, arrow, out = spec.partition("->")
    ins = lhs.split(",")
    if len(ins) != n:
        raise ShapeError(f"einsum: the spec names {len(ins)} operands, {n} given")
    if not arrow:  # implicit output: letters seen once, in alphabetical order
        letters = "".join(ins)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    for part in (*ins, out):
        if not part.isalpha() and part:
            raise ShapeError(f"einsum: bad subscripts {spec!r}")
    return ins, out


def einsum(spec: str, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ins, out = _parse(spec, len(operands))
    sizes: dict[str, int] = {}
    for sub, x in zip(ins, operands):
        if len(sub) != x.ndim:
            raise ShapeError(f"einsum: {sub!r} names {len(sub)} dims of a {x.ndim}-d operand")
        if len(set(sub)) != len(sub):
            raise ShapeError(f"einsum: a repeated letter in {sub!r} (diagonals) is not supported")
        for c, d in zip(sub, x.shape):
            if sizes.setdefault(c, d) != d and d != 1 and sizes[c] != 1:
                raise ShapeError(f"einsum: letter {c!r} has sizes {sizes[c]} and {d}")
            sizes[c] = max(sizes[c], d)
    letters = list(out) + sorted(set("".join(ins)) - set(out))
    if len(operands) == 2:
        y = _as_matmul(ins, out, operands, sizes)
        if y is not None:
            return y
    total = None
    for sub, x in zip(ins, operands):
        aligned = _align(x, sub, letters)
        total = aligned if total is None else total * aligned
    drop = tuple(range(len(out), len(letters)))
    return total.sum(drop) if drop else total


def _align(x, sub: str, letters: list[str]):
    """``x`` permuted to ``letters``' order with a 1 for each letter it lacks."""
    mine = [c for c in letters if c in sub]
    y = x.permute(tuple(sub.index(c) for c in mine)) if mine != list(sub) else x
    return y.reshape(tuple(x.shape[sub.index(c)] if c in sub else 1 for c in letters))


def _as_matmul(ins, out, operands, sizes):
    """``a @ b`` over batch letters (in both and the output), rows (a and output),
    cols (b and output) and summed letters (both, not the output); None when the spec
    has another shape (a letter in one operand only that the output drops, ...)."""
    a, b = ins
    sa, sb, so = set(a), set(b), set(out)
    batch = [c for c in out if c in sa and c in sb]
    rows = [c for c in out if c in sa and c not in sb]
    cols = [c for c in out if c in sb and c not in sa]
    summed = [c for c in a if c in sb and c not in so]
    if set(batch + rows + summed) != sa or set(batch + cols + summed) != sb:
        return None
    if any(operands[0].shape[a.index(c)] != operands[1].shape[b.index(c)] for c in sa & sb):
        return None  # broadcast sizes: the general path handles them

    def grouped(x, sub, first, second):
        order = [sub.index(c) for c in batch + first + second]
        y = x.permute(tuple(order)) if order != list(range(len(sub))) else x
        size = 1
        for c in first:
            size *= sizes[c]
        other = 1
        for c in second:
            other *= sizes[c]
        return y.reshape(tuple(sizes[c] for c in batch) + (size, other))

    y = grouped(operands[0], a, rows, summed) @ grouped(operands[1], b, summed, cols)
    y = y.reshape(tuple(sizes[c] for c in batch + rows + cols))
    now = batch + rows + cols
    perm = tuple(now.index(c) for c in out)
    return y.permute(perm) if perm != tuple(range(len(out))) else y
