"""torch-shaped MultiheadAttention and TransformerEncoderLayer (nn layer).

Both hold torch's parameters under torch's names (``in_proj_weight``, ``out_proj``,
``self_attn``, ``linear1``, ``norm1`` ...), so ``named_parameters()``, ``state_dict()``
and attribute access read as torch's, and compute with the catalog's ``nn/attention``
block (drawn and run as it is): the packed projections reach it as row slices.

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
from ..catalog.blocks.common import ACTIVATIONS
from ..catalog.blocks.linear import activated
from ..catalog.module import Module, ModuleList
from ..ops.composites import softmax
from ..runtime.factories import arange, full
from ..runtime.functional import cat, dropout
from . import attention_options as O
from ._home import block_args, unsupported
from .layers import Dropout, LayerNorm, Linear


def _keep_flags(key_padding_mask):
    """torch's padding mask (True: ignore) as the catalog's keep-flags (True: attend)."""
    if key_padding_mask is None:
        return None
    return key_padding_mask.cast("bool").logical_not()


def _batch_major(x, batch_first: bool):
    return x if batch_first else x.permute(1, 0, 2)


def _torch_fields(E, heads, p, batch_first, add_zero_attn, same, kdim, vdim) -> dict:
    """The plain attributes torch's MultiheadAttention keeps."""
    return {"embed_dim": E, "num_heads": heads, "dropout": p, "batch_first": bool(batch_first),
            "add_zero_attn": bool(add_zero_attn), "head_dim": E // heads,
            "_qkv_same_embed_dim": same, "kdim": kdim, "vdim": vdim}  # fmt: skip


def _adopt_linear(block: B.Linear, device, dtype) -> Linear:
    """``block``'s tensors as a torch-shaped Linear: torch's ``out_proj``, drawn the way
    the attention block draws its output projection (no second draw)."""
    out = Linear.__new__(Linear)
    B.Block.__init__(out, block.config, device, dtype)
    out.weight, out.bias = block.weight, block.bias
    return out


def _packed(parts):
    """One trainable tensor of ``parts`` stacked along rows (torch's ``in_proj_*``)."""
    with no_grad():
        return cat([p.detach() for p in parts], 0).requires_grad_()


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True,
    add_bias_kv=False, add_zero_attn=False, kdim=None, vdim=None, batch_first=False):
    ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)``.

    The parameters are torch's (``in_proj_weight`` [3E, E] or the three
    ``*_proj_weight``, ``in_proj_bias``, ``bias_k``/``bias_v``, ``out_proj``), so
    ``named_parameters()`` and ``state_dict()`` read as torch's. The maths is the
    catalog block's, kept out of the tree (``_block``): each call gives its q, k and v
    projections row slices of the packed tensors, so gradients reach them."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None, *, generator=None):  # fmt: skip
        super().__init__()
        E = int(embed_dim)
        cfg = B.AttentionConfig(E, int(num_heads), bool(bias), False, float(dropout))
        # drawn in the block's order (q, k, v, o), then kdim/vdim's own draws
        block = B.MultiHeadAttention(cfg, **block_args(device, dtype, generator))
        kdim, vdim = int(kdim or E), int(vdim or E)
        same = (kdim, vdim) == (E, E)
        if not same:
            O.widen_kv(block, kdim, vdim)
        for name, value in _torch_fields(E, cfg.num_heads, float(dropout), batch_first,
                                         add_zero_attn, same, kdim, vdim).items():  # fmt: skip
            object.__setattr__(self, name, value)
        self._own_projections(block, same)
        if add_bias_kv:
            O.add_bias_kv(self, device, dtype)
        else:
            self.bias_k = self.bias_v = None
        self.out_proj = _adopt_linear(block.o, device, dtype)
        object.__setattr__(self, "_block", block)
        object.__setattr__(block, "o", self.out_proj)  # hooks on out_proj see the calls
        with no_grad():  # the block lets go of its own drawn q, k and v tensors
            self._bound()

    def _own_projections(self, block, same: bool) -> None:
        """torch's parameters in torch's order: the packed weight (or the three apart),
        then the packed bias."""
        weights = [block.q.weight, block.k.weight, block.v.weight]
        if same:
            self.in_proj_weight = _packed(weights)
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.in_proj_weight = None
            self.q_proj_weight, self.k_proj_weight, self.v_proj_weight = weights
        biased = block.q.bias is not None
        self.in_proj_bias = _packed([block.q.bias, block.k.bias, block.v.bias]) if biased else None

    def _bound(self):
        """The catalog block with this call's views of the projections and training flag."""
        b, E = self._block, self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = [w[i * E : (i + 1) * E] for i in range(3)]
        else:
            weights = [self.q_proj_weight, self.k_proj_weight, self.v_proj_weight]
        bias = self.in_proj_bias
        biases = [None] * 3 if bias is None else [bias[i * E : (i + 1) * E] for i in range(3)]
        for lin, w, bi in zip((b.q, b.k, b.v), weights, biases, strict=True):
            object.__setattr__(lin, "weight", w)
            object.__setattr__(lin, "bias", bi)
        packed = (self.in_proj_weight, bias) if self._qkv_same_embed_dim else None
        object.__setattr__(b, "packed_qkv", packed)
        object.__setattr__(b, "training", self.training)
        return b

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):  # fmt: skip
        """torch's: (output, weights); the weights (averaged over heads unless
        ``average_attn_weights=False``) where ``need_weights``, else None. Without
        them, self-attention with no mask but the causal one runs the catalog block."""
        b = self._bound()
        general = need_weights or self.bias_k is not None or self.add_zero_attn
        if general or (attn_mask is not None and not is_causal) or key is not value:
            return self._masked(b, query, key, value, key_padding_mask, attn_mask,
                                need_weights, average_attn_weights, is_causal)  # fmt: skip
        q = _batch_major(query, self.batch_first)
        kv = None if key is query else _batch_major(key, self.batch_first)
        if is_causal != b.config.causal:
            object.__setattr__(b, "config", _with_causal(b.config, is_causal))
        y = b(q, _keep_flags(key_padding_mask), kv)
        return _batch_major(y, self.batch_first), None

    def _masked(self, b, query, key, value, key_padding_mask, attn_mask, need_weights, average,
                is_causal=False):  # fmt: skip
        """torch's general path: any ``attn_mask`` ([T, S] or [B*H, T, S]; bool True
        masks, float is added), distinct keys and values; the weights come back too.
        ``is_causal`` without a mask hides the future (torch asks for the mask with the
        hint; dropping the hint would silently attend to the future)."""
        q_in, k_in, v_in = (_batch_major(t, self.batch_first) for t in (query, key, value))
        B, T, H = q_in.shape[0], q_in.shape[1], self.num_heads
        k, v = b.k(k_in), b.v(v_in)
        if self.bias_k is not None:
            k, v, attn_mask, key_padding_mask = O.append_bias(
                k, v, self.bias_k, self.bias_v, attn_mask, key_padding_mask
            )
        S = k.shape[1]
        q, k, v = b._heads(b.q(q_in), B, T), b._heads(k, B, S), b._heads(v, B, S)
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
        y = dropout(w, self.dropout, self.training) @ v
        y = self.out_proj(y.permute(0, 2, 1, 3).reshape(B, T, q_in.shape[2]))
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


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048,
    dropout=0.1, activation='relu', layer_norm_eps=1e-5, batch_first=False,
    norm_first=False, bias=True): ``forward(src, src_mask=None,
    src_key_padding_mask=None, is_causal=False)``.

    torch's children in torch's order (``self_attn``, ``linear1``, ``dropout``,
    ``linear2``, ``norm1``, ``norm2``, ``dropout1``, ``dropout2``), drawn and computed
    as the catalog's ``nn/transformer_block`` (attention, then the MLP, dropout in the
    same places), so the two train alike."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None, *, generator=None):  # fmt: skip
        if not isinstance(activation, str) or activation not in ACTIVATIONS:
            raise unsupported(
                "an activation given as a function (name it)", "TransformerEncoderLayer"
            )
        super().__init__()
        args = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                    dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                    norm_first=norm_first, bias=bias, device=device, dtype=dtype)  # fmt: skip
        object.__setattr__(self, "torch_args", args)
        where = dict(device=device, dtype=dtype)
        draw = dict(where, generator=generator)
        d, p = int(d_model), float(dropout)
        self.self_attn = MultiheadAttention(d, nhead, p, bias, batch_first=True, **draw)
        self.linear1 = Linear(d, dim_feedforward, bias, **draw)
        self.dropout = Dropout(p)
        self.linear2 = Linear(dim_feedforward, d, bias, **draw)
        self.norm1 = LayerNorm(d, layer_norm_eps, bias=bias, **where)
        self.norm2 = LayerNorm(d, layer_norm_eps, bias=bias, **where)
        self.dropout1, self.dropout2 = Dropout(p), Dropout(p)
        object.__setattr__(self, "norm_first", bool(norm_first))
        object.__setattr__(self, "batch_first", bool(batch_first))
        object.__setattr__(self, "activation", activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        causal = causal_hint(src_mask, is_causal, "TransformerEncoderLayer")
        x = _batch_major(src, self.batch_first)
        sa = lambda h: self._sa_block(h, src_key_padding_mask, causal)  # noqa: E731
        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + sa(x))
            x = self.norm2(x + self._ff_block(x))
        return _batch_major(x, self.batch_first)

    def _sa_block(self, x, padding, causal: bool):
        y = self.self_attn(x, x, x, key_padding_mask=padding, need_weights=False,
                           is_causal=causal)  # fmt: skip
        return self.dropout1(y[0])

    def _ff_block(self, x):
        # the catalog MLP's call: fused with its activation where the tier fuses
        h = activated(self.linear1, x, self.activation)
        return self.dropout2(self.linear2(self.dropout(h)))


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
