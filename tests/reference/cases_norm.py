"""Op cases, norm family: the fused row norm (layer norm and RMS norm over the last axis).

The rows go through ``F.layer_norm`` and ``rms_norm``, the composites that pick the
fused primitive, so they check that routing too. Widths cover D below and above one
workgroup's 256 invocations, D not a multiple of 4, D past the registers' cache (each
invocation re-reading its elements), one row and many rows, every weight/bias
combination, a permuted (strided) input and a 1-D input (a single row). Inputs have a
non-zero mean, so the centring is exercised.
"""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from helpers import Case
from inputs import N, U
from scellis import functional as F
from scellis.ops.composites import rms_norm

EPS = 1e-5


def torch_rms(x, w=None):
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS)
    return y * w if w is not None else y


def sc_rms(x, w=None):
    return rms_norm(x, w, EPS)


def ln(d):
    return lambda x, w, b: F.layer_norm(x, d, w, b, EPS)


def torch_ln(d):
    return lambda x, w, b: TF.layer_norm(x, (d,), w, b, EPS)


def permuted(fn):
    """``fn`` of x given as [A, B, D] and seen as [B, A, D]: rows at strided offsets."""
    return lambda x, *p: fn(x.permute(1, 0, 2), *p)


def _x(shape):
    return U(shape, -1.0, 3.0)


# finite differences over thousands of inputs take minutes: the small rows check the VJP
# that way, these hold the kernels' row walks (wide rows, many rows) to torch
NO_FD = frozenset({"no_fd"})
WIDE = [
    Case("layer_norm_d300", ln(300), torch_ln(300), [_x((6, 300)), N((300,)), N((300,))],
         tags=NO_FD),
    Case("rms_norm_d300", sc_rms, torch_rms, [_x((5, 300)), N((300,))], tags=NO_FD),
    Case("layer_norm_rows70_d64", ln(64), torch_ln(64), [_x((70, 64)), N((64,)), N((64,))],
         tags=NO_FD),
    Case("layer_norm_d4100", ln(4100), torch_ln(4100), [_x((2, 4100)), N((4100,)), N((4100,))],
         tags=NO_FD),
    Case("rms_norm_d4100", sc_rms, torch_rms, [_x((1, 4100)), N((4100,))], tags=NO_FD),
]  # fmt: skip

CASES = [
    Case("layer_norm_d13", ln(13), torch_ln(13), [_x((5, 3, 13)), N((13,)), N((13,))]),
    Case("layer_norm_d5_plain", lambda x: F.layer_norm(x, 5, eps=EPS),
         lambda x: TF.layer_norm(x, (5,), eps=EPS), [_x((4, 5))]),
    Case("layer_norm_d6_weight", lambda x, w: F.layer_norm(x, 6, w, None, EPS),
         lambda x, w: TF.layer_norm(x, (6,), w, None, EPS), [_x((3, 6)), N((6,))]),
    Case("layer_norm_d6_bias", lambda x, b: F.layer_norm(x, 6, None, b, EPS),
         lambda x, b: TF.layer_norm(x, (6,), None, b, EPS), [_x((3, 6)), N((6,))]),
    Case("layer_norm_1d_d9", ln(9), torch_ln(9), [_x((9,)), N((9,)), N((9,))]),
    Case("layer_norm_permuted_d7", permuted(ln(7)), permuted(torch_ln(7)),
         [_x((3, 4, 7)), N((7,)), N((7,))]),
    Case("rms_norm_d7", sc_rms, torch_rms, [_x((3, 7)), N((7,))]),
    Case("rms_norm_d9_plain", sc_rms, torch_rms, [_x((2, 2, 9))]),
    Case("rms_norm_one_row_d130", sc_rms, torch_rms, [_x((1, 130)), N((130,))]),
] + WIDE  # fmt: skip
