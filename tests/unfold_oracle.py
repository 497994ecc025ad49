"""torch's twins of the windows over time: ``time_unfold`` through ``F.unfold`` and its
adjoint ``time_fold`` through ``F.fold`` (both over a height of 1, whose columns are
channel-major, tap-minor, as the primitives' are)."""

from __future__ import annotations

import torch.nn.functional as TF


def torch_time_unfold(x, size, stride=1, dilation=1, lo=0, hi=0):
    """[B, T, C] -> [B, n, C*size]: column c*size + j is tap j of channel c."""
    padded = TF.pad(x.transpose(1, 2), (lo, hi))[:, :, None, :]
    cols = TF.unfold(padded, (1, size), dilation=(1, dilation), stride=(1, stride))
    return cols.transpose(1, 2)


def torch_time_fold(g, steps, size, stride=1, dilation=1, lo=0, hi=0):
    """[B, n, C*size] -> [B, steps, C]: each step sums the columns that read it."""
    padded = TF.fold(g.transpose(1, 2), (1, lo + steps + hi), (1, size),
                     dilation=(1, dilation), stride=(1, stride))  # fmt: skip
    return padded[:, :, 0, lo : lo + steps].transpose(1, 2)
