"""torch-shaped LSTM and GRU (nn layer) over the catalog's recurrent blocks.

Same parameters, names and layouts as torch (``weight_ih_l0`` ...), so
``load_state_dict(torch_lstm.state_dict())`` works key for key. The call follows
torch: ``lstm(x, (h0, c0))`` returns ``(output, (h_n, c_n))`` and ``gru(x, h0)``
returns ``(output, h_n)``, time-major unless ``batch_first=True``; an unbatched
``[T, F]`` input gives unbatched results. ``bidirectional=True`` adds torch's
``*_reverse`` parameters and concatenates both directions. An LSTM with ``proj_size``
(torch's ``weight_hr_l{k}``: the hidden state projected to ``proj_size`` features)
steps through ``steps`` rather than the catalog's fused recurrence.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError
from ..catalog import blocks as B
from . import _reset
from ._home import block_args, uniform_param
from .cells import run_torch_style
from .utils.rnn import PackedSequence


def _config(cls, name, input_size, hidden_size, num_layers, bias, dropout, bidirectional):
    return cls(int(input_size), int(hidden_size), int(num_layers), bool(bias), float(dropout),
               bidirectional=bool(bidirectional))  # fmt: skip


class _TorchRecurrent:
    """torch's calling convention around ``run`` (batch-first [B, T, F] underneath)."""

    batch_first = False
    kind = "lstm"

    def flatten_parameters(self) -> None:
        """torch's cuDNN weight compaction: nothing to do here."""

    def _call(self, x, state):
        if isinstance(x, PackedSequence) or self.kind == "lstm_proj":  # step by step
            return run_torch_style(self, self.kind, x, state, self.batch_first)
        unbatched = x.ndim == 2
        if unbatched:
            x = x.unsqueeze(0 if self.batch_first else 1)
            state = _map(state, lambda s: s.unsqueeze(1))
        seq_major = not self.batch_first
        if seq_major:
            x = x.permute(1, 0, 2)
        out, final = self.run(x, state)
        if seq_major:
            out = out.permute(1, 0, 2)
        if unbatched:
            out = out.squeeze(0 if self.batch_first else 1)
            final = _map(final, lambda s: s.squeeze(1))
        return out, final


def _map(state, fn):
    if state is None:
        return None
    if isinstance(state, tuple):
        return tuple(fn(s) for s in state)
    return fn(state)


class LSTM(_TorchRecurrent, B.LSTM):
    """torch.nn.LSTM(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0): ``forward(x, (h0, c0)=None)`` returns
    ``(output, (h_n, c_n))``."""

    reset_parameters = _reset.recurrent

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None, *,
                 generator=None):  # fmt: skip
        cfg = _config(B.LSTMConfig, "LSTM", input_size, hidden_size, num_layers, bias, dropout,
                      bidirectional)  # fmt: skip
        super().__init__(cfg, **block_args(device, dtype, generator))
        object.__setattr__(self, "batch_first", bool(batch_first))
        object.__setattr__(self, "proj_size", int(proj_size))
        if proj_size:
            if not 0 < proj_size < cfg.hidden_size:
                raise ScellisError("LSTM: proj_size must lie between 0 and hidden_size")
            object.__setattr__(self, "kind", "lstm_proj")
            self._project(device, dtype, generator)

    def _project(self, device, dtype, generator) -> None:
        """torch's parameters with a projection, in torch's order: each layer's
        ``weight_hh`` reads ``proj_size`` features, layers above the first read the
        projected outputs, and ``weight_hr`` [proj_size, hidden_size] is added."""
        c, P = self.config, self.proj_size
        H, D = c.hidden_size, self.directions
        old = dict(self.named_parameters())
        self._params.clear()  # each set again below, so in torch's order
        draw = dict(bound=1.0 / math.sqrt(H), device=device, dtype=dtype, generator=generator)
        for k in range(c.num_layers):
            fan_in = c.input_size if k == 0 else P * D
            for sfx in self.suffixes:
                setattr(self, f"weight_ih_l{k}{sfx}", uniform_param((4 * H, fan_in), **draw))
                setattr(self, f"weight_hh_l{k}{sfx}", uniform_param((4 * H, P), **draw))
                for b in ("bias_ih", "bias_hh"):
                    if f"{b}_l{k}{sfx}" in old:
                        setattr(self, f"{b}_l{k}{sfx}", old[f"{b}_l{k}{sfx}"])
                setattr(self, f"weight_hr_l{k}{sfx}", uniform_param((P, H), **draw))

    def forward(self, x, hx=None):
        return self._call(x, hx)


class GRU(_TorchRecurrent, B.GRU):
    """torch.nn.GRU(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0): ``forward(x, h0=None)`` returns ``(output, h_n)``."""

    reset_parameters = _reset.recurrent

    kind = "gru"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, *,
                 generator=None):  # fmt: skip
        cfg = _config(B.GRUConfig, "GRU", input_size, hidden_size, num_layers, bias, dropout,
                      bidirectional)  # fmt: skip
        super().__init__(cfg, **block_args(device, dtype, generator))
        object.__setattr__(self, "batch_first", bool(batch_first))

    def forward(self, x, hx=None):
        return self._call(x, hx)
