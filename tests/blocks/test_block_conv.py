"""Conv1d and the TCN against torch.nn.Conv1d and a torch TCN written here.

The blocks take [B, T, C]; torch's convs take [B, C, T], so the torch side is wrapped
in transposes. Forward and every gradient on random inputs,
f32 on the reference device, torch.testing.assert_close's default tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from blockutil import arr, check_uniform, compare, gen, rng_for

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.catalog import blocks as B


def _ct(f):
    """A torch module taking [B, C, T] applied to [B, T, C]."""
    return lambda t, x: f(t, x.transpose(1, 2)).transpose(1, 2)


CONVS = [
    # in, out, k, stride, padding, dilation, groups, bias, T
    (3, 4, 3, 1, 0, 1, 1, True, 9),
    (4, 6, 3, 2, 1, 1, 2, True, 10),
    (2, 5, 2, 1, "same", 3, 1, False, 8),
    (3, 3, 4, 1, "same", 1, 3, True, 7),
    (4, 2, 5, 3, 2, 2, 1, True, 16),
    (6, 6, 1, 1, "valid", 1, 1, True, 5),
]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
@pytest.mark.parametrize("case", CONVS, ids=[str(i) for i in range(len(CONVS))])
def test_conv1d_matches_torch(case):
    cin, cout, k, s, p, d, g, bias, T = case
    m = B.Conv1d(B.Conv1dConfig(cin, cout, k, s, p, d, g, bias), gen=gen())
    t = torch.nn.Conv1d(cin, cout, k, s, p, d, g, bias)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    x = rng_for(f"conv{case}").standard_normal((2, T, cin))
    compare(m, t, [x], f_torch=_ct(lambda t, x: t(x)), name=f"conv{case}")


@pytest.mark.parametrize("k,d", [(3, 1), (2, 4), (1, 1)])
def test_causal_conv_is_left_padding_and_sees_no_future(k, d):
    m = B.Conv1d(B.Conv1dConfig(3, 2, k, padding="causal", dilation=d), gen=gen())
    t = torch.nn.Conv1d(3, 2, k, dilation=d)
    pad = d * (k - 1)
    x = rng_for(f"causal{k}{d}").standard_normal((2, 7, 3))
    f = _ct(lambda t, x: t(torch.nn.functional.pad(x, (pad, 0))))
    out = compare(m, t, [x], f_torch=f, name=f"causal{k}{d}")
    assert out.shape == (2, 7, 2)
    x2 = x.copy()
    x2[:, 4:] = 5.0  # change the future of step 3: steps 0..3 stay as they were
    y1, y2 = arr(m(sc.tensor(x.astype(np.float32)))), arr(m(sc.tensor(x2.astype(np.float32))))
    np.testing.assert_array_equal(y1[:, :4], y2[:, :4])
    assert not np.allclose(y1[:, 4:], y2[:, 4:])


def test_conv1d_init_and_refusals():
    m = B.Conv1d(B.Conv1dConfig(8, 16, 5), gen=gen(3))
    check_uniform(m.weight, 1 / np.sqrt(8 * 5))
    check_uniform(m.bias, 1 / np.sqrt(8 * 5))
    with pytest.raises(ScellisError, match="groups"):
        B.Conv1d(B.Conv1dConfig(4, 6, 3, groups=4))
    with pytest.raises(ScellisError, match="stride 1"):
        B.Conv1d(B.Conv1dConfig(4, 6, 3, stride=2, padding="same"))
    with pytest.raises(ScellisError, match="padding"):
        B.Conv1d(B.Conv1dConfig(4, 6, 3, padding="full"))


class TorchTCN(torch.nn.Module):
    """The reference: residual blocks of two dilated causal convs (left padding), ReLU,
    dropout, a 1x1 conv on the skip where the channels change; dilation 2**i."""

    def __init__(self, cin, ch, n, k, p):
        super().__init__()
        self.k, self.p = k, p
        self.blocks = torch.nn.ModuleList()
        for i in range(n):
            b = torch.nn.Module()
            a = cin if i == 0 else ch
            b.conv1 = torch.nn.Conv1d(a, ch, k, dilation=2**i)
            b.conv2 = torch.nn.Conv1d(ch, ch, k, dilation=2**i)
            b.down = torch.nn.Conv1d(a, ch, 1) if a != ch else None
            b.dilation = 2**i
            self.blocks.append(b)

    def _drop(self, h):
        return torch.nn.functional.dropout(h, self.p, self.training)

    def forward(self, x):  # [B, T, C]
        x = x.transpose(1, 2)
        for b in self.blocks:
            pad = (self.k - 1) * b.dilation
            h = self._drop(b.conv1(torch.nn.functional.pad(x, (pad, 0))).relu())
            h = self._drop(b.conv2(torch.nn.functional.pad(h, (pad, 0))).relu())
            x = (h + (b.down(x) if b.down is not None else x)).relu()
        return x.transpose(1, 2)


@pytest.mark.parametrize("cin,ch,n,k", [(2, 4, 3, 3), (4, 4, 2, 2)])
def test_tcn_matches_a_torch_tcn(cin, ch, n, k):
    m = B.TCN(B.TCNConfig(cin, ch, n, k, dropout=0.2), gen=gen()).eval()
    t = TorchTCN(cin, ch, n, k, 0.2).eval()
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    x = rng_for(f"tcn{cin}{ch}").standard_normal((2, 12, cin))
    out = compare(m, t, [x], name=f"tcn{cin}{ch}")
    assert out.shape == (2, 12, ch)
    assert m.receptive_field() == 1 + 2 * (k - 1) * (2**n - 1)
    m.train()
    y = m(sc.tensor(x.astype(np.float32)))
    assert not np.allclose(arr(y), arr(out))  # dropout acts in training
