"""torch-shaped LSTM and GRU (nn layer) over the catalog's recurrent blocks.

Same parameters, names and layouts as torch (``weight_ih_l0`` ...), so
``load_state_dict(torch_lstm.state_dict())`` works key for key. The call follows
torch: ``lstm(x, (h0, c0))`` returns ``(output, (h_n, c_n))`` and ``gru(x, h0)``
returns ``(output, h_n)``, time-major unless ``batch_first=True``; an unbatched
``[T, F]`` input gives unbatched results. ``bidirectional=True`` adds torch's
``*_reverse`` parameters and concatenates both directions; LSTM projections
(``proj_size``) are not in the catalog yet and are refused.
"""

from __future__ import annotations

from ..catalog import blocks as B
from ._home import block_args, unsupported
from .cells import run_torch_style
from .utils.rnn import PackedSequence


def _config(cls, name, input_size, hidden_size, num_layers, bias, dropout, bidirectional,
            proj_size=0):  # fmt: skip
    if proj_size:
        raise unsupported("proj_size", name)
    return cls(int(input_size), int(hidden_size), int(num_layers), bool(bias), float(dropout),
               bidirectional=bool(bidirectional))  # fmt: skip


class _TorchRecurrent:
    """torch's calling convention around ``run`` (batch-first [B, T, F] underneath)."""

    batch_first = False
    kind = "lstm"

    def flatten_parameters(self) -> None:
        """torch's cuDNN weight compaction: nothing to do here."""

    def _call(self, x, state):
        if isinstance(x, PackedSequence):  # step by step, each sequence to its own length
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

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None, *,
                 generator=None):  # fmt: skip
        cfg = _config(B.LSTMConfig, "LSTM", input_size, hidden_size, num_layers, bias, dropout,
                      bidirectional, proj_size)  # fmt: skip
        super().__init__(cfg, **block_args(device, dtype, generator))
        object.__setattr__(self, "batch_first", bool(batch_first))

    def forward(self, x, hx=None):
        return self._call(x, hx)


class GRU(_TorchRecurrent, B.GRU):
    """torch.nn.GRU(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0): ``forward(x, h0=None)`` returns ``(output, h_n)``."""

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
