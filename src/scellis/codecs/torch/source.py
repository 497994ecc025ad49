"""PyTorch source for a record (codecs layer): the text of a plain ``nn.Module``.

``module_source(record)`` writes a Python file that imports only torch: helper classes
for the blocks torch lacks in this exact form (pre-norm transformer blocks with
Scellis' parameter names, learned positions, a tied LM head), then ``Model`` whose
children carry the record's block names, so the state dict Scellis exports loads with
``strict=True``. It is for users who outgrow one machine and move to torch's own
distributed stack; nothing here runs torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ...base.errors import ScellisError
from ...catalog.blocks.recurrent import keras_variant
from ...catalog.registry import lookup

HELPERS = '''
ACTS = {
    "relu": F.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "softmax": lambda x: F.softmax(x, -1),
}


class Attention(nn.Module):
    """Multi-head self-attention with separate q, k, v, o projections."""

    def __init__(self, d, heads, bias=True, causal=False, dropout=0.0):
        super().__init__()
        self.heads, self.causal, self.p = heads, causal, dropout
        self.q, self.k = nn.Linear(d, d, bias=bias), nn.Linear(d, d, bias=bias)
        self.v, self.o = nn.Linear(d, d, bias=bias), nn.Linear(d, d, bias=bias)

    def forward(self, x):
        B, T, E = x.shape
        split = lambda y: y.view(B, T, self.heads, E // self.heads).transpose(1, 2)
        p = self.p if self.training else 0.0
        y = F.scaled_dot_product_attention(
            split(self.q(x)), split(self.k(x)), split(self.v(x)), dropout_p=p, is_causal=self.causal
        )
        return self.o(y.transpose(1, 2).reshape(B, T, E))


class MLP(nn.Module):
    def __init__(self, d_in, hidden, d_out, act="gelu", bias=True, dropout=0.0):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, hidden, bias=bias), nn.Linear(hidden, d_out, bias=bias)
        self.act, self.drop = ACTS[act], nn.Dropout(dropout)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))


class TransformerBlock(nn.Module):
    """Pre-norm: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d, heads, d_ff, causal, dropout, act, eps, bias):
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=eps, bias=bias)
        self.attn = Attention(d, heads, bias, causal, dropout)
        self.ln2 = nn.LayerNorm(d, eps=eps, bias=bias)
        self.mlp = MLP(d, d_ff, d, act, bias, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.ln1(x)))
        return x + self.drop(self.mlp(self.ln2(x)))


class Transformer(nn.Module):
    def __init__(self, d, heads, layers, d_ff, causal, dropout, act, eps, bias, final_norm):
        super().__init__()
        self.blocks = nn.ModuleList(
            TransformerBlock(d, heads, d_ff, causal, dropout, act, eps, bias) for _ in range(layers)
        )
        self.ln_f = nn.LayerNorm(d, eps=eps, bias=bias) if final_norm else None

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x) if self.ln_f is not None else x


class LearnedPosition(nn.Module):
    def __init__(self, max_len, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(max_len, dim))

    def forward(self, x):
        return x + self.weight[: x.shape[-2]]


class SinusoidalPosition(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        self.dim, self.base = dim, base

    def forward(self, x):
        T = x.shape[-2]
        i = torch.arange(self.dim // 2, dtype=x.dtype, device=x.device)
        pos = torch.arange(T, dtype=x.dtype, device=x.device)[:, None]
        a = pos * self.base ** (-2 * i / self.dim)
        return x + torch.stack([a.sin(), a.cos()], -1).reshape(T, self.dim)


class TiedHead(nn.Module):
    """Logits from another block's weight (a tied embedding), with an optional own bias."""

    def __init__(self, vocab, bias):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(vocab)) if bias else None

    def forward(self, x, weight):
        return F.linear(x, weight, self.bias)


def pool(x, how):
    if how == "last":
        return x[:, -1]
    if how == "first":
        return x[:, 0]
    if how == "mean":
        return x.mean(1)
    return x
'''


class _Fields:
    """A block's fields as its record gives them, else its Config's defaults (the one
    place the defaults live): ``v("bias")``, ``v["in_features"]`` for a required one."""

    def __init__(self, spec: dict):
        self.spec = spec
        cfg = lookup(spec["block_id"], "block").config
        self.defaults = {f.name: f.default for f in dataclasses.fields(cfg)}

    def __call__(self, key: str):
        v = self.spec.get(key)
        return self.defaults.get(key) if v is None else v

    def __getitem__(self, key: str):
        return self.spec[key]


# the transformer fields whose non-default values the torch module does not model
_PLAIN = {"num_kv_heads": None, "rotary_scaling": 1.0, "qkv_bias": None, "norm": "layer",
          "norm_first": True, "mlp": "plain", "head_dim": None,
          "window": None}  # fmt: skip


def _recurrent(v) -> str:
    cls = "LSTM" if v["block_id"] == "nn/lstm" else "GRU"
    return (
        f"nn.{cls}({v['input_size']}, {v['hidden_size']}, num_layers={v('num_layers')}, "
        f"bias={v('bias')}, batch_first=True, dropout={float(v('dropout'))!r}"
        + (", bidirectional=True)" if v("bidirectional") else ")")
    )


def _transformer(v) -> str:
    b, d = v["block_id"], v["d_model"]
    args = (
        f"{d}, {v['num_heads']}, "
        + (f"{v['num_layers']}, " if b == "nn/transformer" else "")
        + f"{v('d_ff') or 4 * d}, {v('kind') == 'decoder'}, {float(v('dropout'))!r}, "
        f"{v('activation')!r}, {v('eps')!r}, {v('bias')}"
    )
    return (
        f"Transformer({args}, {v('final_norm')})"
        if b == "nn/transformer"
        else (f"TransformerBlock({args})")
    )


def _head(v) -> str:
    n = v("n_outputs") if v["block_id"] == "nn/regression_head" else v["n_classes"]
    return f"nn.Linear({v['in_features']}, {n}, bias={v('bias')})"


def _lm_head(v) -> str:
    if v("tie_to"):
        return f"TiedHead({v['vocab_size']}, {v('bias')})"
    return f"nn.Linear({v['d_model']}, {v['vocab_size']}, bias={v('bias')})"


def _keras_gates(spec: dict) -> str | None:
    variant = keras_variant(spec)
    return f"{variant} has no torch export" if variant else None


def _attention_variant(spec: dict) -> str | None:
    if spec.get("rotary"):
        return "rotary attention has no torch export yet"
    # the Llama/BERT variants: export --to hf writes those families
    odd = [k for k, plain in _PLAIN.items() if k in spec and spec[k] != plain]
    if odd:
        return (
            f"{', '.join(odd)} have no torch export yet "
            "(export --to hf writes GPT-2, Llama, Qwen2 and BERT layouts)"
        )
    return None


def _child(name: str, v, x: str) -> str:
    return f"self.{name}({x})"


def _activation_call(name: str, v, x: str) -> str:
    return f"ACTS[{v('function')!r}]({x})"


def _recurrent_call(name: str, v, x: str) -> str:
    last = v("output") == "last"
    if last and v("bidirectional"):
        # the forward direction's last step beside the backward's first (torch's h_n)
        H = v["hidden_size"]
        return (f"torch.cat([(y_{name} := self.{name}({x})[0])[:, -1, :{H}], "
                f"y_{name}[:, 0, {H}:]], -1)")  # fmt: skip
    return f"self.{name}({x})[0]" + ("[:, -1]" if last else "")


def _head_call(name: str, v, x: str) -> str:
    return f"self.{name}(pool({x}, {v('pool')!r}))"


def _lm_head_call(name: str, v, x: str) -> str:
    if v("tie_to"):
        return f"self.{name}({x}, self.{v('tie_to')}.weight)"
    return _child(name, v, x)


@dataclass(frozen=True)
class _Export:
    """How one block kind becomes a child of the torch ``Model``, and how ``forward``
    calls it."""

    # the constructor expression from the block's fields (defaults: its Config's), None
    # for a block with no child; absent: the kind has no export, for the reason ``why``
    make: Callable | None = None
    why: str = ""
    # the refusal of some of the kind's field values (a reason), else None
    variant: Callable[[dict], str | None] | None = None
    # the forward's expression: call(block name, its fields, the inputs joined by commas)
    call: Callable[[str, _Fields, str], str] = _child


def _no(why: str) -> _Export:
    return _Export(why=why)


# one entry per block kind of the catalog (a test holds the two lists equal)
_EXPORTS = {
    "nn/linear": _Export(
        lambda v: f"nn.Linear({v['in_features']}, {v['out_features']}, bias={v('bias')})"
    ),
    "nn/regression_head": _Export(_head, call=_head_call),
    "nn/classification_head": _Export(_head, call=_head_call),
    "nn/layer_norm": _Export(lambda v: (
        f"nn.LayerNorm({v['normalized_shape']}, eps={v('eps')!r}, "
        f"elementwise_affine={v('elementwise_affine')}, bias={v('bias')})"
    )),
    "nn/rms_norm": _Export(lambda v: (
        f"nn.RMSNorm({v['normalized_shape']}, eps={v('eps')!r}, "
        f"elementwise_affine={v('elementwise_affine')})"
    )),
    "nn/lstm": _Export(_recurrent, variant=_keras_gates, call=_recurrent_call),
    "nn/gru": _Export(_recurrent, variant=_keras_gates, call=_recurrent_call),
    "nn/embedding": _Export(lambda v: (
        f"nn.Embedding({v['num_embeddings']}, {v['embedding_dim']}, "
        f"padding_idx={v('padding_idx')!r})"
    )),
    "nn/learned_position": _Export(lambda v: f"LearnedPosition({v['max_len']}, {v['dim']})"),
    "nn/sinusoidal_position": _Export(
        lambda v: f"SinusoidalPosition({v['dim']}, {float(v('base'))!r})"
    ),
    "nn/dropout": _Export(lambda v: f"nn.Dropout({float(v('p'))!r})"),
    "nn/mlp": _Export(lambda v: (
        f"MLP({v['in_features']}, {v['hidden_features']}, "
        f"{v('out_features') or v['in_features']}, {v('activation')!r}, {v('bias')}, "
        f"{float(v('dropout'))!r})"
    )),
    "nn/attention": _Export(lambda v: (
        f"Attention({v['embed_dim']}, {v['num_heads']}, {v('bias')}, {v('causal')}, "
        f"{float(v('dropout'))!r})"
    ), variant=_attention_variant),
    "nn/transformer": _Export(_transformer, variant=_attention_variant),
    "nn/transformer_block": _Export(_transformer, variant=_attention_variant),
    "nn/lm_head": _Export(_lm_head, call=_lm_head_call),
    # a function of the forward, no child
    "nn/activation": _Export(lambda v: None, call=_activation_call),
    "nn/conv1d": _no("not written yet"),
    "nn/avg_pool1d": _no("not written yet"),
    "nn/max_pool1d": _no("not written yet"),
    "nn/global_pool1d": _no("not written yet"),
    "nn/tcn": _no("not written yet"),
    "nn/scaled_dot_product_attention": _no("not written yet"),
    "nn/residual": _no("a container of blocks: not written yet"),
    "nn/sequential": _no("a container of blocks: not written yet"),
    "nn/batch_norm1d": _no("its running statistics are buffers, which the export does not carry"),
    "nn/batch_norm2d": _no("its running statistics are buffers, which the export does not carry"),
    "nn/conv2d": _no("not written yet"),
    "nn/max_pool2d": _no("not written yet"),
    "nn/avg_pool2d": _no("not written yet"),
    "nn/gated_mlp": _no("not written yet; export --to hf writes the Llama layout"),
    "nn/token_type": _no("not written yet; export --to hf writes the BERT layout"),
    "onnx/op": _no("an imported ONNX operator: export --to onnx keeps it"),
}  # fmt: skip


def _export(name: str, spec: dict) -> _Export:
    """The table's entry for a block; ScellisError for a kind it cannot write."""
    b = spec["block_id"]
    entry = _EXPORTS.get(b)
    if entry is None:  # a user's own block kind
        raise ScellisError(f"block {name!r}: {b} has no torch export")
    if entry.make is None:
        raise ScellisError(f"block {name!r}: {b} has no torch export ({entry.why})")
    why = entry.variant(spec) if entry.variant is not None else None
    if why is not None:
        raise ScellisError(f"block {name!r}: {why}")
    return entry


def _init(name: str, spec: dict) -> str | None:
    """The constructor expression of a block's child (None: no child)."""
    return _export(name, spec).make(_Fields(spec))


def _call(name: str, spec: dict, args: list[str]) -> str:
    """The forward's expression of a block on its inputs ``args``."""
    return _export(name, spec).call(name, _Fields(spec), ", ".join(args))


def module_source(record: dict, order: list[str], wiring: dict[str, list[str]]) -> str:
    """The Python text of ``Model``; ``order``/``wiring`` as RecordModel resolved them."""
    blocks = record["blocks"]
    inputs = list((record.get("inputs") or {}).keys())
    outs = record.get("outputs") or [order[-1]]
    outs = [outs] if isinstance(outs, str) else list(outs)
    init = []
    for name in order:
        expr = _init(name, blocks[name])
        if expr is not None:
            init.append(f"        self.{name} = {expr}")
    body = []
    for name in order:
        body.append(
            f"        v_{name} = {_call(name, blocks[name], [f'v_{s}' for s in wiring[name]])}"
        )
    ret = ", ".join(f"v_{o}" for o in outs)
    head = (
        f'"""PyTorch module for {record.get("model", "a Scellis record")}, written by '
        "`scellis export --to torch`.\n\nPlain torch: it imports nothing of Scellis. Load the "
        "state dict next to it with\n``Model().load_state_dict(torch.load(path, "
        'weights_only=True))``.\n"""\n\nimport torch\nimport torch.nn.functional as F\n'
        "from torch import nn\n"
    )
    model = [
        "",
        "",
        "class Model(nn.Module):",
        f'    """Inputs, in order: {", ".join(inputs)}."""',
        "",
        "    def __init__(self):",
        "        super().__init__()",
        *init,
        "",
        f"    def forward(self, {', '.join(f'v_{i}' for i in inputs)}):",
        *body,
        f"        return {ret}",
    ]
    return head + HELPERS + "\n".join(model) + "\n"
