"""One step of torch's recurrent cells, and a whole stacked (bi)directional run over
a time-major sequence with optional per-sequence lengths (nn layer).

The gate layouts are torch's (LSTM: i, f, g, o; GRU: r, z, n). With ``lengths``, a
sequence's state stops moving after its last step and its outputs there are zero,
which is what torch computes for a packed batch; the reverse direction then starts at
each sequence's own last step. This path serves RNN, the cells and packed input to
LSTM and GRU; LSTM and GRU on a plain tensor keep the catalog's fused recurrence.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.blocks.common import dense
from ..ops import composites as C
from ..runtime import functional as RF
from ..runtime.factories import as_tensor

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def lstm_step(x, state, w_ih, w_hh, b_ih=None, b_hh=None):
    h, c = state
    i, f, g, o = (dense(x, w_ih, b_ih) + dense(h, w_hh, b_hh)).chunk(4, -1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


def gru_step(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    ir, iz, i_n = dense(x, w_ih, b_ih).chunk(3, -1)
    hr, hz, h_n = dense(h, w_hh, b_hh).chunk(3, -1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + (h - n) * z


def rnn_step(x, h, w_ih, w_hh, b_ih=None, b_hh=None, nonlinearity="tanh"):
    pre = dense(x, w_ih, b_ih) + dense(h, w_hh, b_hh)
    if nonlinearity == "tanh":
        return pre.tanh()
    if nonlinearity == "relu":
        return pre.relu()
    raise ScellisError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")


def _step(kind):
    if kind == "lstm":
        return lstm_step
    if kind == "gru":
        return gru_step
    return lambda x, h, *w: rnn_step(x, h, *w, nonlinearity=kind[4:])


def _blend(new, old, keep):
    return old + (new - old) * keep


def _direction(kind, x, state, weights, keep, reverse):
    """One layer, one direction over time-major ``x`` [T, B, F]; ``keep`` per step
    [B, 1] masks (or None); returns the outputs [T, B, H] and the final state."""
    T = x.shape[0]
    step, outs = _step(kind), [None] * T
    for t in reversed(range(T)) if reverse else range(T):
        new = step(x[t], state, *weights)
        h_new = new[0] if kind == "lstm" else new
        if keep is None:
            state = new
            outs[t] = h_new
        else:
            k = keep[t]
            state = tuple(_blend(n, o, k) for n, o in zip(new, state, strict=True)) if (
                kind == "lstm") else _blend(new, state, k)  # fmt: skip
            outs[t] = h_new * k
    return C.stack(outs, 0), state


def run_layers(module, kind, x, hx, lengths=None):
    """torch's multi-layer recurrence on time-major ``x`` [T, B, F] with ``module``'s
    ``weight_ih_l{k}{_reverse}`` ... parameters; ``hx`` [L*D, B, H] (a pair for LSTM)
    or None. Returns (output [T, B, D*H], h_n or (h_n, c_n))."""
    T, B = x.shape[0], x.shape[1]
    spec = getattr(module, "config", module)  # a catalog block's Config, or the module
    L, H, p = spec.num_layers, spec.hidden_size, spec.dropout
    dirs = ("", "_reverse") if spec.bidirectional else ("",)
    if hx is None:
        zero = x.new_zeros((L * len(dirs), B, H))
        hx = (zero, zero) if kind == "lstm" else zero
    keep = None
    if lengths is not None:
        keep = [as_tensor([[1.0 if t < n else 0.0] for n in lengths], dtype=x.dtype.name,
                          device=x.device.name) for t in range(T)]  # fmt: skip
    finals = []
    for k in range(L):
        outs = []
        for d, sfx in enumerate(dirs):
            idx = k * len(dirs) + d
            state = (hx[0][idx], hx[1][idx]) if kind == "lstm" else hx[idx]
            weights = [getattr(module, f"{n}_l{k}{sfx}", None)
                       for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]  # fmt: skip
            out, final = _direction(kind, x, state, weights, keep, bool(d))
            outs.append(out)
            finals.append(final)
        x = outs[0].cat(outs[1:], -1) if len(outs) > 1 else outs[0]
        if p and module.training and k < L - 1:
            x = RF.dropout(x, p, True)
    if kind == "lstm":
        return x, (C.stack([f[0] for f in finals], 0), C.stack([f[1] for f in finals], 0))
    return x, C.stack(finals, 0)
