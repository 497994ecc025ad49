"""PyTorch source for a record (codecs layer): the text of a plain ``nn.Module``.

``module_source(record)`` writes a Python file that imports only torch: helper classes
for the blocks torch lacks in this exact form (pre-norm transformer blocks with
Scellis' parameter names, learned positions, a tied LM head), then ``Model`` whose
children carry the record's block names, so the state dict Scellis exports loads with
``strict=True``. It is for users who outgrow one machine and move to torch's own
distributed stack; nothing here runs torch.
"""

from __future__ import annotations

from ...base.errors import ScellisError
from ...catalog.blocks.recurrent import keras_variant

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


def _f(spec: dict, key: str, default):
    v = spec.get(key, default)
    return default if v is None else v


# the transformer fields whose non-default values the torch module does not model
_PLAIN = {"num_kv_heads": None, "rotary_scaling": 1.0, "qkv_bias": None, "norm": "layer",
          "norm_first": True, "mlp": "plain", "head_dim": None,
          "window": None}  # fmt: skip


def _init(name: str, spec: dict) -> str | None:
    """The constructor expression of a block's child (None: no child)."""
    b = spec["block_id"]
    if b == "nn/linear":
        bias = _f(spec, "bias", True)
        return f"nn.Linear({spec['in_features']}, {spec['out_features']}, bias={bias})"
    if b in ("nn/regression_head", "nn/classification_head"):
        n = spec.get("n_outputs", 1) if b == "nn/regression_head" else spec["n_classes"]
        return f"nn.Linear({spec['in_features']}, {n}, bias={_f(spec, 'bias', True)})"
    if b == "nn/layer_norm":
        affine, bias = _f(spec, "elementwise_affine", True), _f(spec, "bias", True)
        return (
            f"nn.LayerNorm({spec['normalized_shape']}, eps={_f(spec, 'eps', 1e-5)!r}, "
            f"elementwise_affine={affine}, bias={bias})"
        )
    if b == "nn/rms_norm":
        return (
            f"nn.RMSNorm({spec['normalized_shape']}, eps={spec.get('eps')!r}, "
            f"elementwise_affine={_f(spec, 'elementwise_affine', True)})"
        )
    if b in ("nn/lstm", "nn/gru"):
        cls = "LSTM" if b == "nn/lstm" else "GRU"
        if keras_variant(spec):
            raise ScellisError(f"block {name!r}: {keras_variant(spec)} has no torch export")
        return (
            f"nn.{cls}({spec['input_size']}, {spec['hidden_size']}, "
            f"num_layers={_f(spec, 'num_layers', 1)}, bias={_f(spec, 'bias', True)}, "
            f"batch_first=True, dropout={float(_f(spec, 'dropout', 0.0))!r}"
            + (", bidirectional=True)" if spec.get("bidirectional") else ")")
        )
    if b == "nn/embedding":
        return (
            f"nn.Embedding({spec['num_embeddings']}, {spec['embedding_dim']}, "
            f"padding_idx={spec.get('padding_idx')!r})"
        )
    if b == "nn/learned_position":
        return f"LearnedPosition({spec['max_len']}, {spec['dim']})"
    if b == "nn/sinusoidal_position":
        return f"SinusoidalPosition({spec['dim']}, {float(_f(spec, 'base', 10000.0))!r})"
    if b == "nn/dropout":
        return f"nn.Dropout({float(_f(spec, 'p', 0.5))!r})"
    if b == "nn/mlp":
        out = spec.get("out_features") or spec["in_features"]
        return (
            f"MLP({spec['in_features']}, {spec['hidden_features']}, {out}, "
            f"{_f(spec, 'activation', 'gelu')!r}, {_f(spec, 'bias', True)}, "
            f"{float(_f(spec, 'dropout', 0.0))!r})"
        )
    if b in ("nn/transformer", "nn/transformer_block", "nn/attention"):
        if spec.get("rotary"):
            raise ScellisError(f"block {name!r}: rotary attention has no torch export yet")
        # the Llama/BERT variants: export --to hf writes those families
        odd = [k for k, plain in _PLAIN.items() if k in spec and spec[k] != plain]
        if odd:
            raise ScellisError(
                f"block {name!r}: {', '.join(odd)} have no torch export yet "
                "(export --to hf writes GPT-2, Llama, Qwen2 and BERT layouts)"
            )
    if b == "nn/attention":
        return (
            f"Attention({spec['embed_dim']}, {spec['num_heads']}, {_f(spec, 'bias', True)}, "
            f"{_f(spec, 'causal', False)}, {float(_f(spec, 'dropout', 0.0))!r})"
        )
    if b in ("nn/transformer", "nn/transformer_block"):
        d = spec["d_model"]
        causal = _f(spec, "kind", "decoder" if b == "nn/transformer" else "encoder") == "decoder"
        args = (
            f"{d}, {spec['num_heads']}, "
            + (f"{spec['num_layers']}, " if b == "nn/transformer" else "")
            + f"{spec.get('d_ff') or 4 * d}, {causal}, "
            f"{float(_f(spec, 'dropout', 0.0))!r}, {_f(spec, 'activation', 'gelu')!r}, "
            f"{_f(spec, 'eps', 1e-5)!r}, {_f(spec, 'bias', True)}"
        )
        if b == "nn/transformer":
            return f"Transformer({args}, {_f(spec, 'final_norm', True)})"
        return f"TransformerBlock({args})"
    if b == "nn/lm_head":
        if spec.get("tie_to"):
            return f"TiedHead({spec['vocab_size']}, {_f(spec, 'bias', False)})"
        return f"nn.Linear({spec['d_model']}, {spec['vocab_size']}, bias={_f(spec, 'bias', False)})"
    if b == "nn/activation":
        return None
    raise ScellisError(f"block {name!r}: {b} has no torch export")


def _call(name: str, spec: dict, args: list[str]) -> str:
    b = spec["block_id"]
    x = ", ".join(args)
    if b == "nn/activation":
        return f"ACTS[{spec.get('function', 'relu')!r}]({x})"
    if b in ("nn/lstm", "nn/gru"):
        if spec.get("output") == "last" and spec.get("bidirectional"):
            # the forward direction's last step beside the backward's first (torch's h_n)
            H = spec["hidden_size"]
            return (f"torch.cat([(y_{name} := self.{name}({x})[0])[:, -1, :{H}], "
                    f"y_{name}[:, 0, {H}:]], -1)")  # fmt: skip
        tail = "[:, -1]" if spec.get("output") == "last" else ""
        return f"self.{name}({x})[0]{tail}"
    if b in ("nn/regression_head", "nn/classification_head"):
        return f"self.{name}(pool({x}, {spec.get('pool', 'none')!r}))"
    if b == "nn/lm_head" and spec.get("tie_to"):
        return f"self.{name}({x}, self.{spec['tie_to']}.weight)"
    return f"self.{name}({x})"


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
