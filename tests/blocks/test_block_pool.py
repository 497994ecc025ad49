"""Max/avg pooling, global pooling and BatchNorm1d against torch.

The blocks take [B, T, C]; torch's pool and batch-norm modules take [B, C, T], so the
torch side is wrapped in transposes. Forward and every gradient on random inputs,
f32 on the reference device, torch.testing.assert_close's default tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from blockutil import arr, compare, gen, rng_for

from scellis.catalog import blocks as B


def _ct(f):
    """A torch module taking [B, C, T] applied to [B, T, C]."""
    return lambda t, x: f(t, x.transpose(1, 2)).transpose(1, 2)


@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 2, 1), (4, 1, 2), (3, 3, 0)])
def test_pooling_matches_torch(k, s, p):
    x = rng_for(f"pool{k}{s}{p}").standard_normal((2, 11, 3))
    mx = B.MaxPool1d(B.MaxPool1dConfig(k, s, p))
    compare(mx, torch.nn.MaxPool1d(k, s, p), [x], f_torch=_ct(lambda t, x: t(x)),
            name=f"max{k}{s}{p}")  # fmt: skip
    av = B.AvgPool1d(B.AvgPool1dConfig(k, s, p))
    compare(av, torch.nn.AvgPool1d(k, s, p), [x], f_torch=_ct(lambda t, x: t(x)),
            name=f"avg{k}{s}{p}")  # fmt: skip


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_global_pooling_matches_torch(mode):
    x = rng_for("global" + mode).standard_normal((3, 7, 4))
    m = B.GlobalPool1d(B.GlobalPool1dConfig(mode))
    f = (lambda t, x: x.mean(1)) if mode == "avg" else (lambda t, x: x.amax(1))
    out = compare(m, torch.nn.Identity(), [x], f_torch=f, name="global" + mode)
    assert out.shape == (3, 4)


@pytest.mark.parametrize("shape", [(6, 4), (3, 5, 4)])
def test_batch_norm_train_and_eval_match_torch(shape):
    rng = rng_for(f"bn{shape}")
    m = B.BatchNorm1d(B.BatchNorm1dConfig(4, momentum=0.3), gen=gen())
    t = torch.nn.BatchNorm1d(4, momentum=0.3)
    assert sorted(m.state_dict()) == sorted(k for k in t.state_dict() if "num_batches" not in k)
    with torch.no_grad():  # affine parameters away from ones and zeros
        t.weight.copy_(torch.from_numpy(rng.standard_normal(4).astype(np.float32)))
        t.bias.copy_(torch.from_numpy(rng.standard_normal(4).astype(np.float32)))
    m.load_state_dict(t.state_dict())
    f = (lambda t, x: t(x)) if len(shape) == 2 else _ct(lambda t, x: t(x))
    for i in range(2):  # two training steps: the running stats move twice
        x = rng.standard_normal(shape) * 2 + 1
        compare(m, t, [x], f_torch=f, name=f"bn{shape}{i}")
    for name in ("running_mean", "running_var"):
        torch.testing.assert_close(torch.from_numpy(arr(getattr(m, name))), getattr(t, name))
    m.eval(), t.eval()
    compare(m, t, [rng.standard_normal(shape)], f_torch=f, name=f"bn{shape}eval")


def test_batch_norm_without_running_stats_or_affine():
    m = B.BatchNorm1d(B.BatchNorm1dConfig(3, affine=False, track_running_stats=False))
    t = torch.nn.BatchNorm1d(3, affine=False, track_running_stats=False)
    assert m.state_dict() == {}
    x = rng_for("bn_plain").standard_normal((2, 5, 3))
    compare(m.eval(), t.eval(), [x], f_torch=_ct(lambda t, x: t(x)), name="bn_plain")
