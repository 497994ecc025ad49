"""Op cases, shape family: matmul, views, indexing, gather/scatter, pad, concat, reductions."""

from __future__ import annotations

import torch

from helpers import Case
from inputs import Distinct, Idx, Levels, N
from scellis import functional as F


def torch_pad(x, lo, hi, interior, value=0.0):
    """XLA-style pad (edge and interior) in torch, by writing ``x`` into a filled tensor."""
    shape = [a + b + d + max(d - 1, 0) * i for d, a, b, i in zip(x.shape, lo, hi, interior)]
    out = torch.full(shape, value, dtype=x.dtype)
    idx = tuple(
        slice(a, a + max(d - 1, 0) * (i + 1) + 1, i + 1) for d, a, i in zip(x.shape, lo, interior)
    )
    out[idx] = x
    return out


def torch_scatter_add(src, idx, axis, shape):
    return torch.zeros(shape, dtype=src.dtype).scatter_add(axis, idx, src)


MATMUL_SHAPES = [
    ((3, 7), (7, 5)),
    ((1, 129), (129, 3)),
    ((2, 3, 7), (2, 7, 5)),  # batched
    ((4, 1, 3, 7), (5, 7, 2)),  # batch dims broadcast
    ((3, 7), (2, 7, 1)),
    ((7,), (7,)),  # 1-D cases
    ((7,), (7, 3)),
    ((3, 7), (7,)),
    ((2, 3, 7), (7,)),
    ((129,), (2, 129, 3)),
]

CASES = [
    Case(f"matmul{a}{b}", lambda a, b: a @ b, torch.matmul, [N(a), N(b)]) for a, b in MATMUL_SHAPES
]

CASES += [
    # views
    Case("T", lambda x: x.T, lambda x: x.T, [N((3, 7))]),
    Case("mT", lambda x: x.mT * 1.0, lambda x: x.mT * 1.0, [N((2, 3, 7))]),
    Case("transpose02", lambda x: x.transpose(0, 2), lambda x: x.transpose(0, 2), [N((3, 1, 7))]),
    Case("permute", lambda x: x.permute(2, 0, 1), lambda x: x.permute(2, 0, 1), [N((3, 5, 7))]),
    Case("reshape", lambda x: x.reshape(7, -1), lambda x: x.reshape(7, -1), [N((3, 7, 2))]),
    # a transposed tensor cannot be viewed as (21,): reshape copies first
    Case("reshape_copy", lambda x: x.T.reshape(-1), lambda x: x.T.reshape(-1), [N((3, 7))]),
    Case(
        "reshape_view_of_T",
        lambda x: x.permute(1, 0, 2).reshape(7, 6),
        lambda x: x.permute(1, 0, 2).reshape(7, 6),
        [N((3, 7, 2))],
    ),
    Case(
        "expand", lambda x: x.expand(4, 3, 7) * 1.0, lambda x: x.expand(4, 3, 7) * 1.0, [N((3, 1))]
    ),
    Case(
        "unsqueeze_squeeze",
        lambda x: x.unsqueeze(1).squeeze(0),
        lambda x: x.unsqueeze(1).squeeze(0),
        [N((1, 7))],
    ),
    Case("flatten", lambda x: x.flatten(1), lambda x: x.flatten(1), [N((3, 7, 1, 2))]),
    Case("slice_steps", lambda x: x[1:6:2, ::3], lambda x: x[1:6:2, ::3], [N((7, 8))]),
    Case("slice_3d", lambda x: x[:, 1:, 0:7:3], lambda x: x[:, 1:, 0:7:3], [N((2, 3, 7))]),
    Case("slice_of_slice", lambda x: x[2:][::2], lambda x: x[2:][::2], [N((129,))]),
    Case("int_index", lambda x: x[1], lambda x: x[1], [N((3, 7))]),
    Case("int_neg_index", lambda x: x[-1, 2:], lambda x: x[-1, 2:], [N((3, 7))]),
    Case("int_and_step", lambda x: x[..., 2, ::2], lambda x: x[..., 2, ::2], [N((2, 3, 7))]),
    Case("none_index", lambda x: x[None, :, None], lambda x: x[None, :, None], [N((3, 7))]),
    Case("tensor_index", lambda x, i: x[i], lambda x, i: x[i], [N((7, 3)), Idx((5,), 7)]),
    Case(
        "tensor_index_2d", lambda x, i: x[:, i], lambda x, i: x[:, i], [N((3, 7)), Idx((2, 4), 7)]
    ),
    Case(
        "tensor_index_int", lambda x, i: x[0, i], lambda x, i: x[0, i], [N((2, 7, 3)), Idx((4,), 7)]
    ),
    # torch treats the int as a select, so the indexed dims stay in place: (3, 4)
    Case(
        "tensor_index_apart",
        lambda x, i: x[0, :, i],
        lambda x, i: x[0, :, i],
        [N((2, 3, 7)), Idx((4,), 7)],
    ),
    Case(
        "gather0",
        lambda x, i: x.gather(i, 0),
        lambda x, i: torch.gather(x, 0, i),
        [N((5, 7)), Idx((3, 7), 5)],
    ),
    Case(
        "gather1",
        lambda x, i: x.gather(i, 1),
        lambda x, i: torch.gather(x, 1, i),
        [N((3, 7)), Idx((2, 4), 7)],
    ),
    Case(
        "gather_neg_axis",
        lambda x, i: x.gather(i, -1),
        lambda x, i: torch.gather(x, -1, i),
        [N((2, 3, 5)), Idx((2, 3, 9), 5)],
    ),
    Case(
        "scatter_add1",
        lambda s, i: s.scatter_add(i, 1, (3, 5)),
        lambda s, i: torch_scatter_add(s, i, 1, (3, 5)),
        [N((3, 7)), Idx((3, 7), 5)],
    ),
    Case(
        "scatter_add0",
        lambda s, i: s.scatter_add(i, 0, (4, 7)),
        lambda s, i: torch_scatter_add(s, i, 0, (4, 7)),
        [N((2, 3)), Idx((2, 3), 4)],
    ),
    # layout
    Case(
        "concat",
        lambda a, b, c: F.concat([a, b, c], 1),
        lambda a, b, c: torch.cat([a, b, c], 1),
        [N((3, 1)), N((3, 7)), N((3, 2))],
    ),
    Case(
        "concat0",
        lambda a, b: F.concat([a, b]),
        lambda a, b: torch.cat([a, b]),
        [N((129,)), N((1,))],
    ),
    Case(
        "stack",
        lambda a, b: F.stack([a, b], 1),
        lambda a, b: torch.stack([a, b], 1),
        [N((3, 7)), N((3, 7))],
    ),
    Case(
        "pad",
        lambda x: F.pad(x, [1, 0], [2, 3], 0.5),
        lambda x: torch_pad(x, [1, 0], [2, 3], [0, 0], 0.5),
        [N((3, 7))],
    ),
    Case(
        "pad_interior",
        lambda x: x.pad([1, 0, 2], [0, 2, 1], [1, 2, 0]),
        lambda x: torch_pad(x, [1, 0, 2], [0, 2, 1], [1, 2, 0]),
        [N((3, 1, 7))],
    ),
    # reductions
    Case("sum_all", lambda x: x.sum(), torch.sum, [N((3, 7))]),
    Case("sum_axis", lambda x: x.sum(1), lambda x: x.sum(1), [N((3, 129))]),
    Case(
        "sum_keepdim",
        lambda x: x.sum((0, 2), keepdim=True),
        lambda x: x.sum((0, 2), keepdim=True),
        [N((3, 1, 7))],
    ),
    Case("mean_all", lambda x: x.mean(), torch.mean, [N((129,))]),
    Case(
        "mean_axis",
        lambda x: x.mean(-1, keepdim=True),
        lambda x: x.mean(-1, keepdim=True),
        [N((3, 7))],
    ),
    Case("max_all", lambda x: x.max(), torch.amax, [Distinct((3, 7))]),
    Case("max_axis", lambda x: x.max(0).values, lambda x: torch.amax(x, 0), [Distinct((3, 7))]),
    Case(
        "max_keepdim",
        lambda x: x.max((1, 2), keepdim=True),
        lambda x: torch.amax(x, (1, 2), keepdim=True),
        [Distinct((2, 3, 7))],
    ),
    Case("min_all", lambda x: x.min(), torch.amin, [Distinct((129,))]),
    Case(
        "min_keepdim",
        lambda x: x.min(1, keepdim=True).values,
        lambda x: torch.amin(x, 1, keepdim=True),
        [Distinct((3, 7))],
    ),
    Case("var_all", lambda x: x.var(), torch.var, [N((3, 7))]),
    Case(
        "var_axis", lambda x: x.var(1, keepdim=True), lambda x: x.var(1, keepdim=True), [N((3, 7))]
    ),
    Case(
        "var_pop",
        lambda x: x.var(0, correction=0),
        lambda x: torch.var(x, 0, correction=0),
        [N((129, 3))],
    ),
    Case("std_axis", lambda x: x.std(-1), lambda x: x.std(-1), [N((3, 7))]),
]

# tied extrema: amax/amin share the gradient evenly, max(dim) gives it all to the index
# it returns, as torch's do: torch-only rows
CASES += [
    Case(
        "max_ties",
        lambda x: x.amax(1),
        lambda x: torch.amax(x, 1),
        [Levels((3, 7), 1)],
        tags=frozenset({"no_fd"}),
    ),
    Case(
        "max_dim_ties",
        lambda x: x.max(1).values,
        lambda x: torch.max(x, 1).values,
        [Levels((3, 7), 1)],
        tags=frozenset({"no_fd"}),
    ),
    Case(
        "min_ties_all",
        lambda x: x.min(),
        torch.amin,
        [Levels((3, 7), 1)],
        tags=frozenset({"no_fd"}),
    ),
]
