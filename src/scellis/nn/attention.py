"""torch-shaped MultiheadAttention and TransformerEncoderLayer (nn layer).

Built on the catalog's ``nn/attention`` and ``nn/transformer_block``. torch packs the
q, k and v projections into ``in_proj_weight`` / ``in_proj_bias`` and names the rest
``out_proj``, ``linear1``, ``norm1`` ...; ``translate_state`` unpacks and renames
those keys, so ``load_state_dict(torch_layer.state_dict())`` works.

``state_dict()`` gives torch's names back (``export_state``), so checkpoints cross
key for key in either direction.

``MultiheadAttention`` called with ``need_weights=False`` and no mask, or the causal one
(``is_causal=True``, with or without torch's ``attn_mask`` from
``generate_square_subsequent_mask``, which the flag declares causal, as torch's hint
does), runs the catalog block (flash on WebGPU) and returns ``(output, None)``; the
weights (torch's default), any other ``attn_mask``, distinct keys and values and the
options of ``attention_options`` take torch's general path, which returns the weights
where asked. The encoder layer takes the causal mask only.
"""

from __future__ import annotations

import dataclasses
import math

from ..autograd import no_grad
from ..base.errors import ShapeError
from ..base.rng import Generator
from ..catalog import blocks as B
from ..catalog.module import Module, ModuleList
from ..ops.composites import softmax
from ..runtime.factories import arange, full
from ..runtime.functional import cat, dropout
from . import attention_options as O
from ._home import block_args, unsupported


def unpack_in_proj(state: dict, prefix: str = "") -> dict:
    """torch's packed ``in_proj_*`` and ``out_proj.*`` as the catalog's q/k/v/o keys."""
    out = {}
    for key, value in state.items():
        if not key.startswith(prefix):
            out[key] = value
            continue
        rest = key[len(prefix) :]
        if rest in ("in_proj_weight", "in_proj_bias"):
            third = value.shape[0] // 3
            kind = "weight" if rest.endswith("weight") else "bias"
            for i, name in enumerate("qkv"):
                out[f"{prefix}{name}.{kind}"] = value[i * third : (i + 1) * third]
        elif rest.startswith("out_proj."):
            out[f"{prefix}o.{rest[len('out_proj.') :]}"] = value
        else:
            out[key] = value
    return out


def pack_in_proj(state: dict, prefix: str = "") -> dict:
    """The catalog's q/k/v/o keys under ``prefix`` as torch's packed ``in_proj_*`` and
    ``out_proj.*`` (the inverse of ``unpack_in_proj``; the packed tensors are copies)."""
    out = {k: v for k, v in state.items() if not k.startswith(prefix)}
    with no_grad():
        for kind in ("weight", "bias"):
            parts = [state.get(f"{prefix}{n}.{kind}") for n in "qkv"]
            if all(p is not None for p in parts):
                out[f"{prefix}in_proj_{kind}"] = cat([p.detach() for p in parts], 0)
    for kind in ("weight", "bias"):
        if f"{prefix}o.{kind}" in state:
            out[f"{prefix}out_proj.{kind}"] = state[f"{prefix}o.{kind}"]
    return out


def _keep_flags(key_padding_mask):
    """torch's padding mask (True: ignore) as the catalog's keep-flags (True: attend)."""
    if key_padding_mask is None:
        return None
    return key_padding_mask.cast("bool").logical_not()


def _batch_major(x, batch_first: bool):
    return x if batch_first else x.permute(1, 0, 2)


class MultiheadAttention(B.MultiHeadAttention):
    """torch.nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True,
    add_bias_kv=False, add_zero_attn=False, kdim=None, vdim=None, batch_first=False):
    ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)``."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None, *, generator=None):  # fmt: skip
        cfg = B.AttentionConfig(int(embed_dim), int(num_heads), bool(bias), False, float(dropout))
        super().__init__(cfg, **block_args(device, dtype, generator))
        kdim, vdim = int(kdim or embed_dim), int(vdim or embed_dim)
        separate = (kdim, vdim) != (cfg.embed_dim, cfg.embed_dim)
        if separate:
            O.widen_kv(self, kdim, vdim)
        if add_bias_kv:
            O.add_bias_kv(self, device, dtype)
        else:
            self.bias_k = self.bias_v = None
        object.__setattr__(self, "batch_first", bool(batch_first))
        object.__setattr__(self, "add_zero_attn", bool(add_zero_attn))
        object.__setattr__(self, "head_dim", cfg.embed_dim // cfg.num_heads)
        object.__setattr__(self, "_qkv_same_embed_dim", not separate)
        object.__setattr__(self, "kdim", kdim)
        object.__setattr__(self, "vdim", vdim)

    exports_torch_names = True

    def translate_state(self, state: dict) -> dict:
        return unpack_in_proj(O.unpack_separate(state))

    def export_state(self, state: dict) -> dict:
        packed = pack_in_proj(state) if self._qkv_same_embed_dim else O.pack_separate(state)
        return O.torch_order(packed, state)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):  # fmt: skip
        """torch's: (output, weights); the weights (averaged over heads unless
        ``average_attn_weights=False``) where ``need_weights``, else None. Without
        them, self-attention with no mask but the causal one runs the catalog block."""
        general = need_weights or self.bias_k is not None or self.add_zero_attn
        if general or (attn_mask is not None and not is_causal) or key is not value:
            return self._masked(query, key, value, key_padding_mask, attn_mask,
                                need_weights, average_attn_weights, is_causal)  # fmt: skip
        q = _batch_major(query, self.batch_first)
        kv = None if key is query else _batch_major(key, self.batch_first)
        if is_causal != self.config.causal:
            object.__setattr__(self, "config", _with_causal(self.config, is_causal))
        y = super().forward(q, _keep_flags(key_padding_mask), kv)
        return _batch_major(y, self.batch_first), None

    def _masked(self, query, key, value, key_padding_mask, attn_mask, need_weights, average,
                is_causal=False):  # fmt: skip
        """torch's general path: any ``attn_mask`` ([T, S] or [B*H, T, S]; bool True
        masks, float is added), distinct keys and values; the weights come back too.
        ``is_causal`` without a mask hides the future (torch asks for the mask with the
        hint; dropping the hint would silently attend to the future)."""
        q_in, k_in, v_in = (_batch_major(t, self.batch_first) for t in (query, key, value))
        B, T, H = q_in.shape[0], q_in.shape[1], self.config.num_heads
        k, v = self.k(k_in), self.v(v_in)
        if self.bias_k is not None:
            k, v, attn_mask, key_padding_mask = O.append_bias(
                k, v, self.bias_k, self.bias_v, attn_mask, key_padding_mask
            )
        S = k.shape[1]
        q, k, v = self._heads(self.q(q_in), B, T), self._heads(k, B, S), self._heads(v, B, S)
        if self.add_zero_attn:
            k, v, attn_mask, key_padding_mask = O.append_zeros(k, v, attn_mask, key_padding_mask)
            S += 1
        scores = (q @ k.mT) * (1.0 / math.sqrt(q.shape[-1]))  # [B, H, T, S]
        if attn_mask is None and is_causal:
            attn_mask = generate_square_subsequent_mask(T, device=scores.device) if T == S else None
            if attn_mask is None:
                raise ShapeError(f"MultiheadAttention: is_causal needs as many keys as queries, "
                                 f"got {S} keys for {T} queries")  # fmt: skip
        if attn_mask is not None:
            if tuple(attn_mask.shape) not in ((T, S), (B * H, T, S)):
                raise ShapeError(
                    f"MultiheadAttention: attn_mask of shape {tuple(attn_mask.shape)}; "
                    f"torch's shapes here are ({T}, {S}) and ({B * H}, {T}, {S})"
                )
            m = attn_mask if attn_mask.ndim == 2 else attn_mask.reshape(B, H, T, S)
            scores = scores.masked_fill(m, float("-inf")) if m.dtype.kind == "b" else scores + m
        if key_padding_mask is not None:
            pad = key_padding_mask.reshape(B, 1, 1, S)
            scores = (
                scores.masked_fill(pad, float("-inf")) if pad.dtype.kind == "b" else scores + pad
            )
        w = softmax(scores, -1)
        y = dropout(w, self.config.dropout, self.training) @ v
        y = self.o(y.permute(0, 2, 1, 3).reshape(B, T, q_in.shape[2]))
        weights = (w.mean(1) if average else w) if need_weights else None
        return _batch_major(y, self.batch_first), weights


def causal_hint(mask, is_causal, where: str) -> bool:
    """Whether attention is causal: torch's ``is_causal`` declares a given mask to be the
    causal mask (its hint), so the mask's values are not read; without the hint a mask
    is read once and taken if it is the causal one (as torch's own check does), and any
    other mask is refused."""
    if mask is not None and not is_causal:
        if not _is_causal_mask(mask):
            raise unsupported("an attention mask other than the causal one", where)
        return True
    return bool(is_causal)


def _is_causal_mask(mask) -> bool:
    """Whether ``mask`` [T, T] hides exactly the future: -inf (or True) above the
    diagonal, 0 (or False) on and below it."""
    if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        return False
    rows = mask.tolist()
    boolean = mask.dtype.kind == "b"
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            future = j > i
            if boolean and bool(v) != future:
                return False
            if not boolean and (v != float("-inf") if future else v != 0.0):
                return False
    return True


def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
    """torch's causal mask: 0 on and below the diagonal, -inf above it."""
    rows = arange(int(sz), device=device).reshape((sz, 1))
    cols = arange(int(sz), device=device).reshape((1, sz))
    zero = full((sz, sz), 0.0, dtype=dtype or "f32", device=device)
    return zero.where(rows >= cols, float("-inf"))


def _with_causal(cfg, causal: bool):
    """torch chooses causal attention per call; the block reads it from its config."""
    return dataclasses.replace(cfg, causal=bool(causal))


class TransformerEncoderLayer(B.TransformerBlock):
    """torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048,
    dropout=0.1, activation='relu', layer_norm_eps=1e-5, batch_first=False,
    norm_first=False, bias=True): ``forward(src, src_mask=None,
    src_key_padding_mask=None, is_causal=False)``."""

    _TORCH_NAMES = {"norm1.": "ln1.", "norm2.": "ln2.", "linear1.": "mlp.fc1.",
                    "linear2.": "mlp.fc2.", "self_attn.": "attn."}  # fmt: skip

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None, *, generator=None):  # fmt: skip
        if not isinstance(activation, str):
            raise unsupported(
                "an activation given as a function (name it)", "TransformerEncoderLayer"
            )
        cfg = B.TransformerBlockConfig(
            int(d_model), int(nhead), int(dim_feedforward), "encoder", float(dropout),
            activation, float(layer_norm_eps), bool(bias), norm_first=bool(norm_first),
        )  # fmt: skip
        super().__init__(cfg, **block_args(device, dtype, generator))
        object.__setattr__(self, "batch_first", bool(batch_first))
        args = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                    dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                    norm_first=norm_first, bias=bias, device=device, dtype=dtype)  # fmt: skip
        object.__setattr__(self, "torch_args", args)

    def translate_state(self, state: dict) -> dict:
        renamed = {}
        for key, value in state.items():
            for theirs, ours in self._TORCH_NAMES.items():
                if key.startswith(theirs):
                    key = ours + key[len(theirs) :]
                    break
            renamed[key] = value
        return unpack_in_proj(renamed, "attn.")

    exports_torch_names = True

    def export_state(self, state: dict) -> dict:
        """torch's names and order: ``self_attn.*`` packed, ``linear1/2``, ``norm1/2``."""
        ours = {v: k for k, v in self._TORCH_NAMES.items()}
        renamed = {}
        for key, value in pack_in_proj(state, "attn.").items():
            for mine, theirs in ours.items():
                if key.startswith(mine):
                    key = theirs + key[len(mine) :]
                    break
            renamed[key] = value
        order = ("self_attn.", "linear1.", "linear2.", "norm1.", "norm2.")
        rank = {k: next((i for i, p in enumerate(order) if k.startswith(p)), 9) for k in renamed}
        return dict(sorted(renamed.items(), key=lambda kv: rank[kv[0]]))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        causal = causal_hint(src_mask, is_causal, "TransformerEncoderLayer")
        if causal != self.attn.config.causal:
            object.__setattr__(self.attn, "config", _with_causal(self.attn.config, causal))
        y = super().forward(_batch_major(src, self.batch_first), _keep_flags(src_key_padding_mask))
        return _batch_major(y, self.batch_first)


_COPIES = Generator(0, "layer-copies")


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder(encoder_layer, num_layers, norm=None): ``layers.0`` ..
    ``layers.{n-1}``, each a copy of ``encoder_layer`` (same config and starting
    weights, as torch's deep copies), then ``norm`` if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None,
                 enable_nested_tensor=True, mask_check=True):  # fmt: skip
        super().__init__()
        layers = []
        # the stack permutes once; the copies draw from a private stream, then take
        # the layer's weights, so the caller's streams advance as with one layer
        args = {**encoder_layer.torch_args, "batch_first": True, "generator": _COPIES}
        for _ in range(int(num_layers)):
            layer = TransformerEncoderLayer(**args)
            layer.load_state_dict(encoder_layer.state_dict())
            layers.append(layer)
        self.layers = ModuleList(layers)
        self.norm = norm
        object.__setattr__(self, "batch_first", encoder_layer.batch_first)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        causal = causal_hint(mask, is_causal, "TransformerEncoder")
        x = _batch_major(src, self.batch_first)
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=src_key_padding_mask, is_causal=causal)
        if self.norm is not None:
            x = self.norm(x)
        return _batch_major(x, self.batch_first)
