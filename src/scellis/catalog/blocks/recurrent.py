"""Recurrent blocks (catalog layer): stacked LSTM and GRU over batch-first sequences.

Inputs are [B, T, F]. Parameters follow torch's names and layouts
(``weight_ih_l{k}`` [G*H, in], ``weight_hh_l{k}`` [G*H, H], ``bias_ih_l{k}``,
``bias_hh_l{k}``; gates stacked in torch's order: LSTM i, f, g, o and GRU r, z, n),
so torch state dicts load key for key. Every tensor starts U(-1/sqrt(H), 1/sqrt(H)).

Keras' variants (what TF.js and Keras models import as): ``recurrent_activation:
hard_sigmoid`` gates with clip(0.2 x + 0.5, 0, 1) instead of the logistic sigmoid (TF.js'
default), and a GRU with ``reset_after: false`` applies r before the recurrent product of
the candidate, n = tanh(W_in x + b_in + W_hn (r*h) + b_hn). Either runs step by step (the
fused kernels are torch's maths).

A bidirectional block runs each layer twice: forward in time, and over the time-reversed
sequence with its own weights (``weight_ih_l{k}_reverse`` ...), reversed back; the two
are concatenated on the feature axis ([B, T, 2H]: forward first) and feed the next layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ShapeError
from ...ops.composites import flip, stack
from ...runtime.creation import zeros
from ...runtime.functional import dropout
from ..registry import field, register
from .common import Block, dense

OUTPUTS = ("sequence", "last")
GATE_FUNCTIONS = {
    "sigmoid": lambda x: x.sigmoid(),
    "hard_sigmoid": lambda x: (x * 0.2 + 0.5).clamp(0.0, 1.0),  # Keras 2 / TF.js
}


def keras_variant(spec: dict) -> str | None:
    """What of a recurrent block's record spec is Keras' maths and not torch's (None: all
    torch's), for the exporters that write torch's cell to say what they cannot hold."""
    if spec.get("recurrent_activation", "sigmoid") != "sigmoid":
        return f"recurrent_activation {spec['recurrent_activation']}"
    if spec.get("reset_after", True) is False:
        return "reset_after false"
    return None


@dataclass(frozen=True)
class _RecurrentConfig:
    """Fields shared by the LSTM and the GRU (each Config adds only its doc)."""

    input_size: int = field(doc="features per time step (F)", min=1)
    hidden_size: int = field(doc="size of the hidden state (H; the LSTM's cell too)", min=1)
    num_layers: int = field(1, doc="stacked layers; each feeds the next its sequence", min=1)
    bias: bool = field(True, doc="learned biases b_ih and b_hh")
    dropout: float = field(0.0, doc="dropout between stacked layers, in training", min=0, max=1)
    output: str = field(
        "sequence",
        doc="'sequence': [B, T, H]; 'last': the last step [B, H] (bidirectional: the "
        "forward's last step and the backward's first, as torch's h_n)",
        choices=OUTPUTS,
    )
    bidirectional: bool = field(
        False, doc="also run each layer backward in time; outputs carry 2H features", quiet=True
    )
    recurrent_activation: str = field(
        "sigmoid",
        doc="the gates' function: 'sigmoid', or 'hard_sigmoid' (clip(0.2x + 0.5, 0, 1), "
        "Keras 2's and TF.js'; runs step by step)",
        choices=tuple(GATE_FUNCTIONS),
        quiet=True,
    )
    fused: bool = field(
        True,
        doc="one fused kernel per time step (forward and backward); False runs each "
        "step as separate ops, for comparison",
    )


@dataclass(frozen=True)
class LSTMConfig(_RecurrentConfig):
    """A stacked LSTM over [B, T, F]: gates i, f, g, o; c' = f*c + i*g, h' = o*tanh(c')."""


@dataclass(frozen=True)
class GRUConfig(_RecurrentConfig):
    """A stacked GRU over [B, T, F]: gates r, z, n; n = tanh(W_in x + b_in + r*(W_hn h + b_hn))."""

    reset_after: bool = field(
        True,
        doc="r gates the candidate's recurrent product after it is taken (torch, Keras 2.x+); "
        "False: before, n = tanh(W_in x + b_in + W_hn (r*h) + b_hn) (TF.js; runs step by step)",
        quiet=True,
    )


class _Recurrent(Block):
    gates = 0  # stacked gate blocks per weight matrix
    carries_cell = False

    def __init__(self, cfg, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        H, G = cfg.hidden_size, self.gates
        bound = 1.0 / math.sqrt(H)
        # registration order is torch's, so named_parameters() lists keys as torch does
        for k in range(cfg.num_layers):
            fan_in = cfg.input_size if k == 0 else H * self.directions
            for sfx in self.suffixes:
                setattr(self, f"weight_ih_l{k}{sfx}", self.uniform((G * H, fan_in), bound))
                setattr(self, f"weight_hh_l{k}{sfx}", self.uniform((G * H, H), bound))
                if cfg.bias:
                    setattr(self, f"bias_ih_l{k}{sfx}", self.uniform((G * H,), bound))
                    setattr(self, f"bias_hh_l{k}{sfx}", self.uniform((G * H,), bound))

    @property
    def directions(self) -> int:
        return 2 if self.config.bidirectional else 1

    @property
    def suffixes(self) -> tuple[str, ...]:
        return ("", "_reverse") if self.config.bidirectional else ("",)

    def _layer(self, k: int, sfx: str = ""):
        g = lambda n: getattr(self, f"{n}_l{k}{sfx}", None)
        return g("weight_ih"), g("weight_hh"), g("bias_ih"), g("bias_hh")

    def run(self, x, state=None):
        """The top layer's sequence [B, T, D*H] and the final state, torch-shaped.

        ``state`` / the returned state: ``h`` [L*D, B, H] for a GRU, ``(h, c)`` for an
        LSTM (D = 2 directions when bidirectional, ordered layer by layer, forward first);
        ``None`` starts from zeros.
        """
        c = self.config
        if x.ndim != 3 or x.shape[2] != c.input_size:
            raise ShapeError(f"{type(self).__name__} takes [B, T, {c.input_size}], got {x.shape}")
        B, T, _ = x.shape
        H, L, D = c.hidden_size, c.num_layers, self.directions
        if state is None:
            z = zeros((B, H), x.dtype, x.device)
            state = ((z,) * L * D, (z,) * L * D) if self.carries_cell else (z,) * L * D
        hs0, cs0 = state if self.carries_cell else (state, None)
        finals_h, finals_c = [], []
        for k in range(L):
            outs = []
            for d, sfx in enumerate(self.suffixes):
                i = k * D + d
                xin = flip(x, 1) if d else x
                seq, h, cell = self._direction(
                    xin, k, sfx, hs0[i], cs0[i] if cs0 is not None else None
                )
                outs.append(flip(seq, 1) if d else seq)
                finals_h.append(h)
                finals_c.append(cell)
            x = outs[0] if D == 1 else outs[0].cat(outs[1:], -1)
            if c.dropout and self.training and k < L - 1:
                x = dropout(x, c.dropout, True)
        h_n = stack(finals_h, 0)
        return x, ((h_n, stack(finals_c, 0)) if self.carries_cell else h_n)

    def _direction(self, x, k: int, sfx: str, h, cell):
        """One layer in one direction over [B, T, F]: its sequence and final (h, c)."""
        w_ih, w_hh, b_ih, b_hh = self._layer(k, sfx)
        xw = dense(x, w_ih, b_ih)  # the input projection of every step at once
        if self.config.fused and self.torch_maths:
            return self._fused(xw, h, cell, w_hh, b_hh)
        outs = []
        for t in range(x.shape[1]):
            h, cell = self._step(xw[:, t], h, cell, w_hh, b_hh)
            outs.append(h)
        return stack(outs, 1), h, cell

    @property
    def torch_maths(self) -> bool:
        """The fused kernels compute torch's cell; Keras' variants run step by step."""
        return self.config.recurrent_activation == "sigmoid"

    def gate(self, x):
        return GATE_FUNCTIONS[self.config.recurrent_activation](x)

    def _step(self, xg, h, cell, w_hh, b_hh):
        return self._cell(xg, dense(h, w_hh, b_hh), h, cell)

    def forward(self, x, state=None):
        seq, _ = self.run(x, state)
        if self.config.output == "sequence":
            return seq
        if not self.config.bidirectional:
            return seq[:, -1]
        H = self.config.hidden_size
        return seq[:, -1, 0:H].cat([seq[:, 0, H:]], -1)


class LSTM(_Recurrent):
    """torch.nn.LSTM(batch_first=True): gate blocks i, f, g, o."""

    gates = 4
    carries_cell = True

    def __init__(self, cfg: LSTMConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)

    def _fused(self, xw, h0, c0, w_hh, b_hh):
        H, T = self.config.hidden_size, xw.shape[1]
        gx = xw if b_hh is None else xw + b_hh
        y = gx.prim("lstm_seq", h0, c0, w_hh)  # [T, B, 6H]: h, c, i, f, g, o per step
        return y[:, :, 0:H].permute(1, 0, 2), y[T - 1, :, 0:H], y[T - 1, :, H : 2 * H]

    def _cell(self, xg, hg, h, cell):
        H = self.config.hidden_size
        a = xg + hg
        i = self.gate(a[:, 0:H])
        f = self.gate(a[:, H : 2 * H])
        g = a[:, 2 * H : 3 * H].tanh()
        o = self.gate(a[:, 3 * H :])
        cell = f * cell + i * g
        return o * cell.tanh(), cell


class GRU(_Recurrent):
    """torch.nn.GRU(batch_first=True): gate blocks r, z, n; r gates (W_hn h + b_hn)."""

    gates = 3

    def __init__(self, cfg: GRUConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)

    def _fused(self, xw, h0, c0, w_hh, b_hh):
        H, T = self.config.hidden_size, xw.shape[1]
        if b_hh is None:
            b_hh = zeros((3 * H,), xw.dtype, xw.device)
        y = xw.prim("gru_seq", h0, w_hh, b_hh)  # [T, B, 5H]: h, r, z, n, hn per step
        return y[:, :, 0:H].permute(1, 0, 2), y[T - 1, :, 0:H], None

    @property
    def torch_maths(self) -> bool:
        return super().torch_maths and self.config.reset_after

    def _cell(self, xg, hg, h, cell):
        H = self.config.hidden_size
        r = self.gate(xg[:, 0:H] + hg[:, 0:H])
        z = self.gate(xg[:, H : 2 * H] + hg[:, H : 2 * H])
        n = (xg[:, 2 * H :] + r * hg[:, 2 * H :]).tanh()
        return n + z * (h - n), None

    def _step(self, xg, h, cell, w_hh, b_hh):
        if self.config.reset_after:
            return super()._step(xg, h, cell, w_hh, b_hh)
        H = self.config.hidden_size
        part = lambda t, a, b: None if t is None else t[a:b]  # noqa: E731
        hg = dense(h, w_hh[0 : 2 * H], part(b_hh, 0, 2 * H))
        r = self.gate(xg[:, 0:H] + hg[:, 0:H])
        z = self.gate(xg[:, H : 2 * H] + hg[:, H:])
        n = (xg[:, 2 * H :] + dense(r * h, w_hh[2 * H :], part(b_hh, 2 * H, 3 * H))).tanh()
        return n + z * (h - n), None


register("nn/lstm", "block", LSTMConfig, LSTM, builtin=True)
register("nn/gru", "block", GRUConfig, GRU, builtin=True)
