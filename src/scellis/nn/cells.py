"""torch.nn's LSTMCell, GRUCell, RNNCell and the Elman RNN (nn layer).

Parameters carry torch's names and layouts (cells: ``weight_ih`` [G*H, in],
``weight_hh`` [G*H, H], ``bias_ih``, ``bias_hh``; RNN: ``weight_ih_l{k}{_reverse}``
...), all drawn U(-1/sqrt(H), 1/sqrt(H)) as torch draws them. The steps are
``steps``'s, one per call for a cell, a loop over time for RNN.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError
from ..catalog.module import Module
from . import steps as S
from ._home import uniform_param
from .utils.rnn import PackedSequence, pack_like, unpack_time_major


class _Cell(Module):
    gates = 1

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None, *,
                 generator=None):  # fmt: skip
        super().__init__()
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bias
        G, H = self.gates, self.hidden_size
        draw = dict(bound=1.0 / math.sqrt(H), device=device, dtype=dtype, generator=generator)
        self.weight_ih = uniform_param((G * H, self.input_size), **draw)
        self.weight_hh = uniform_param((G * H, H), **draw)
        self.bias_ih = uniform_param((G * H,), **draw) if bias else None
        self.bias_hh = uniform_param((G * H,), **draw) if bias else None

    def _weights(self):
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def _prepare(self, x, hx):
        """torch accepts an unbatched [in] input (and state); a missing state is zeros."""
        unbatched = x.ndim == 1
        if unbatched:
            x = x.unsqueeze(0)
        if hx is None:
            hx = x.new_zeros((x.shape[0], self.hidden_size))
        elif unbatched:
            hx = tuple(h.unsqueeze(0) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(0)
        return x, hx, unbatched


class LSTMCell(_Cell):
    """torch.nn.LSTMCell(input_size, hidden_size, bias=True): ``forward(x, (h, c)=None)``
    returns ``(h', c')``."""

    gates = 4

    def forward(self, x, hx=None):
        x, hx, unbatched = self._prepare(x, hx)
        if not isinstance(hx, tuple):
            hx = (hx, hx)  # the zeros made by _prepare
        h, c = S.lstm_step(x, hx, *self._weights())
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(_Cell):
    """torch.nn.GRUCell(input_size, hidden_size, bias=True): ``forward(x, h=None)``."""

    gates = 3

    def forward(self, x, hx=None):
        x, hx, unbatched = self._prepare(x, hx)
        h = S.gru_step(x, hx, *self._weights())
        return h.squeeze(0) if unbatched else h


class RNNCell(_Cell):
    """torch.nn.RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None, *, generator=None):  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise ScellisError("RNNCell: nonlinearity must be 'tanh' or 'relu'")
        super().__init__(input_size, hidden_size, bias, device, dtype, generator=generator)
        self.nonlinearity = nonlinearity

    def forward(self, x, hx=None):
        x, hx, unbatched = self._prepare(x, hx)
        h = S.rnn_step(x, hx, *self._weights(), nonlinearity=self.nonlinearity)
        return h.squeeze(0) if unbatched else h


class RNN(Module):
    """torch.nn.RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False): ``forward(x, h0=None)``
    returns ``(output, h_n)``; a PackedSequence gives a PackedSequence back."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None,
                 *, generator=None):  # fmt: skip
        super().__init__()
        if nonlinearity not in ("tanh", "relu"):
            raise ScellisError("RNN: nonlinearity must be 'tanh' or 'relu'")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.nonlinearity, self.bias, self.batch_first = nonlinearity, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        D = 2 if bidirectional else 1
        draw = dict(bound=1.0 / math.sqrt(hidden_size), device=device, dtype=dtype,
                    generator=generator)  # fmt: skip
        for k in range(num_layers):
            fan_in = input_size if k == 0 else hidden_size * D
            for sfx in ("", "_reverse")[:D]:
                setattr(self, f"weight_ih_l{k}{sfx}", uniform_param((hidden_size, fan_in), **draw))
                setattr(self, f"weight_hh_l{k}{sfx}",
                        uniform_param((hidden_size, hidden_size), **draw))  # fmt: skip
                if bias:
                    setattr(self, f"bias_ih_l{k}{sfx}", uniform_param((hidden_size,), **draw))
                    setattr(self, f"bias_hh_l{k}{sfx}", uniform_param((hidden_size,), **draw))

    def forward(self, x, hx=None):
        return run_torch_style(self, f"rnn_{self.nonlinearity}", x, hx, self.batch_first)

    def flatten_parameters(self) -> None:
        """torch's cuDNN weight compaction: nothing to do here."""


def run_torch_style(module, kind, x, hx, batch_first):
    """torch's calling convention around ``steps.run_layers``: batch-first or not,
    unbatched [T, F], or a PackedSequence (which comes back packed)."""
    if isinstance(x, PackedSequence):
        padded, lengths = unpack_time_major(x)
        out, final = S.run_layers(module, kind, padded, hx, lengths)
        return pack_like(out, x), final
    unbatched = x.ndim == 2
    if unbatched:
        x = x.unsqueeze(1)
        hx = _map(hx, lambda s: s.unsqueeze(1))
    elif batch_first:
        x = x.permute(1, 0, 2)
    out, final = S.run_layers(module, kind, x, hx)
    if unbatched:
        return out.squeeze(1), _map(final, lambda s: s.squeeze(1))
    return (out.permute(1, 0, 2) if batch_first else out), final


def _map(state, fn):
    if state is None:
        return None
    return tuple(fn(s) for s in state) if isinstance(state, tuple) else fn(state)
