"""torch.nn's layers over two inputs (nn layer): CosineSimilarity, PairwiseDistance and
Bilinear (``weight`` [out, in1, in2], ``bias`` [out], drawn U(-1/sqrt(in1), ..) as
torch draws them)."""

from __future__ import annotations

import math

from ..catalog.module import Module
from ._home import uniform_param
from ._losses import cosine_similarity, pairwise_distance


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = int(dim), float(eps)

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = float(p), float(eps), bool(keepdim)

    def forward(self, x1, x2):
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


def bilinear(input1, input2, weight, bias=None):
    """torch's F.bilinear: y_o = x1^T W_o x2 + b_o over the last axes."""
    out, n1, n2 = weight.shape
    lead = input1.shape[:-1]
    a = input1.reshape(-1, n1) @ weight.permute(1, 0, 2).reshape(n1, out * n2)
    y = (a.reshape(-1, out, n2) * input2.reshape(-1, 1, n2)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, out)


class Bilinear(Module):
    """torch.nn.Bilinear(in1_features, in2_features, out_features, bias=True)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None, *, generator=None):  # fmt: skip
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        draw = dict(bound=1.0 / math.sqrt(in1_features), device=device, dtype=dtype,
                    generator=generator)  # fmt: skip
        self.weight = uniform_param((out_features, in1_features, in2_features), **draw)
        self.bias = uniform_param((out_features,), **draw) if bias else None

    def forward(self, x1, x2):
        return bilinear(x1, x2, self.weight, self.bias)
