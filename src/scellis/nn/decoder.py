"""torch.nn's TransformerDecoderLayer, TransformerDecoder and the encoder-decoder
Transformer (nn layer).

The decoder layer is composed of this package's torch-shaped modules under torch's
names (``self_attn``, ``multihead_attn``, ``linear1``, ``linear2``, ``norm1..3``), so
state dicts cross key for key; attention masks take MultiheadAttention's paths (any
``tgt_mask``/``memory_mask`` torch accepts, padding masks too). A stack holds copies
of one layer, as torch's deep copies; the Transformer initialises every matrix
xavier-uniform, as torch's ``_reset_parameters`` does.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..base.rng import Generator
from ..catalog.module import Module, ModuleList
from . import functional as F
from . import init
from .attention import (
    MultiheadAttention,
    TransformerEncoder,
    TransformerEncoderLayer,
    generate_square_subsequent_mask,
)
from .layers import Dropout, LayerNorm, Linear

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}
_COPIES = Generator(0, "decoder-copies")


def _activation(activation):
    if callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise ScellisError(f"activation must be 'relu', 'gelu' or a function, got {activation!r}")
    return _ACTIVATIONS[activation]


def _batch_major(x, batch_first: bool):
    return x if batch_first else x.transpose(0, 1)


class TransformerDecoderLayer(Module):
    """torch.nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
    activation='relu', layer_norm_eps=1e-5, batch_first=False, norm_first=False,
    bias=True): ``forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=False,
    memory_is_causal=False)``."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None, *, generator=None):  # fmt: skip
        super().__init__()
        args = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                    dropout=dropout, activation=activation, layer_norm_eps=layer_norm_eps,
                    batch_first=batch_first, norm_first=norm_first, bias=bias, device=device,
                    dtype=dtype)  # fmt: skip
        object.__setattr__(self, "torch_args", args)
        where = dict(device=device, dtype=dtype)
        draw = dict(where, generator=generator)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=True,
                                            **draw)  # fmt: skip
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=True,
                                                 **draw)  # fmt: skip
        self.linear1 = Linear(d_model, dim_feedforward, bias, **draw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias, **draw)
        self.norm_first, self.batch_first = bool(norm_first), bool(batch_first)
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, **where)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, **where)
        self.norm3 = LayerNorm(d_model, layer_norm_eps, bias=bias, **where)
        self.dropout1, self.dropout2, self.dropout3 = (Dropout(dropout) for _ in range(3))
        object.__setattr__(self, "activation", _activation(activation))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False,
                memory_is_causal=False):  # fmt: skip
        x, mem = _batch_major(tgt, self.batch_first), _batch_major(memory, self.batch_first)
        if tgt_is_causal and tgt_mask is None:
            tgt_mask = generate_square_subsequent_mask(x.shape[1], x.device.name)
        sa = lambda h: self._self_block(h, tgt_mask, tgt_key_padding_mask)  # noqa: E731
        ca = lambda h: self._cross_block(h, mem, memory_mask, memory_key_padding_mask)  # noqa: E731
        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + sa(x))
            x = self.norm2(x + ca(x))
            x = self.norm3(x + self._ff_block(x))
        return _batch_major(x, self.batch_first)

    def _self_block(self, x, mask, padding):
        y = self.self_attn(x, x, x, key_padding_mask=padding, attn_mask=mask, need_weights=False)
        return self.dropout1(y[0])

    def _cross_block(self, x, mem, mask, padding):
        y = self.multihead_attn(x, mem, mem, key_padding_mask=padding, attn_mask=mask,
                                need_weights=False)  # fmt: skip
        return self.dropout2(y[0])

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """torch.nn.TransformerDecoder(decoder_layer, num_layers, norm=None): ``layers.0`` ..
    copies of ``decoder_layer`` (same starting weights), then ``norm`` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm=None):
        super().__init__()
        args = {**decoder_layer.torch_args, "generator": _COPIES}
        layers = []
        for _ in range(int(num_layers)):
            layer = TransformerDecoderLayer(**args)
            layer.load_state_dict(decoder_layer.state_dict())
            layers.append(layer)
        self.layers = ModuleList(layers)
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None,
                memory_is_causal=False):  # fmt: skip
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                      memory_key_padding_mask, bool(tgt_is_causal), memory_is_causal)  # fmt: skip
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """torch.nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6,
    num_decoder_layers=6, dim_feedforward=2048, dropout=0.1, activation='relu',
    custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5, batch_first=False,
    norm_first=False, bias=True). The encoder takes no ``src_mask`` but the causal one
    (its layer's rule); the decoder takes any mask."""

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):  # fmt: skip
        super().__init__()
        where = dict(device=device, dtype=dtype)
        common = dict(dim_feedforward=dim_feedforward, dropout=dropout,
                      layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                      norm_first=norm_first, bias=bias, **where)  # fmt: skip
        if custom_encoder is None:
            if not isinstance(activation, str):
                raise ScellisError("Transformer: the encoder takes its activation by name "
                                   "('relu' or 'gelu')")  # fmt: skip
            layer = TransformerEncoderLayer(d_model, nhead, activation=activation, **common)
            custom_encoder = TransformerEncoder(layer, num_encoder_layers,
                                                LayerNorm(d_model, layer_norm_eps, bias=bias,
                                                          **where))  # fmt: skip
        if custom_decoder is None:
            layer = TransformerDecoderLayer(d_model, nhead, activation=activation, **common)
            custom_decoder = TransformerDecoder(layer, num_decoder_layers,
                                                LayerNorm(d_model, layer_norm_eps, bias=bias,
                                                          **where))  # fmt: skip
        self.encoder, self.decoder = custom_encoder, custom_decoder
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):  # fmt: skip
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)  # fmt: skip
        return self.decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                            memory_key_padding_mask, tgt_is_causal, memory_is_causal)  # fmt: skip
