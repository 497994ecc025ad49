"""Shape rules of the built-in blocks for SML validation (catalog layer).

Each rule takes the block's fields (defaults filled in) and its input shapes (lists
of ints or symbolic names) and returns the output shape, raising ShapeMismatch when
an input does not fit. Symbolic dims match anything; a block without a rule has an
unknown output shape, and blocks reading it are not shape-checked.
"""

from __future__ import annotations

from ..sml.registry import ShapeMismatch


def _last(shape: list, want, min_rank: int = 1, rank: int | None = None) -> None:
    if rank is not None and len(shape) != rank:
        raise ShapeMismatch("rank", rank, len(shape))
    if len(shape) < min_rank:
        raise ShapeMismatch("rank at least", min_rank, len(shape))
    got = shape[-1]
    if isinstance(got, int) and isinstance(want, int) and got != want:
        raise ShapeMismatch("last dim", want, got)


def _feature(key: str, out_key: str):
    def rule(f, xs):
        _last(xs[0], f[key])
        return xs[0][:-1] + [f[out_key]]

    return rule


def _same(key: str):
    def rule(f, xs):
        _last(xs[0], f[key])
        return list(xs[0])

    return rule


def _recurrent(f, xs):
    _last(xs[0], f["input_size"], rank=3)
    x = xs[0]
    return [x[0], f["hidden_size"]] if f["output"] == "last" else [x[0], x[1], f["hidden_size"]]


def _head(n_key: str):
    def rule(f, xs):
        x = xs[0]
        _last(x, f["in_features"], min_rank=3 if f["pool"] != "none" else 1)
        keep = x[:-2] if f["pool"] != "none" else x[:-1]
        return keep + [f[n_key]]

    return rule


def _mlp(f, xs):
    _last(xs[0], f["in_features"])
    return xs[0][:-1] + [f["out_features"] or f["in_features"]]


def _position(f, xs):
    x = xs[0]
    _last(x, f["dim"], min_rank=2)
    if isinstance(x[-2], int) and x[-2] > f["max_len"]:
        raise ShapeMismatch("a sequence of at most", f["max_len"], x[-2])
    return list(x)


def _residual(f, xs):
    return list(xs[0])


RULES = {
    "nn/linear": _feature("in_features", "out_features"),
    "nn/lm_head": _feature("d_model", "vocab_size"),
    "nn/embedding": lambda f, xs: list(xs[0]) + [f["embedding_dim"]],
    "nn/lstm": _recurrent,
    "nn/gru": _recurrent,
    "nn/regression_head": _head("n_outputs"),
    "nn/classification_head": _head("n_classes"),
    "nn/mlp": _mlp,
    "nn/gated_mlp": _mlp,
    "nn/token_type": _same("dim"),
    "nn/transformer": _same("d_model"),
    "nn/transformer_block": _same("d_model"),
    "nn/attention": _same("embed_dim"),
    "nn/layer_norm": _same("normalized_shape"),
    "nn/rms_norm": _same("normalized_shape"),
    "nn/learned_position": _position,
    "nn/sinusoidal_position": _same("dim"),
    "nn/dropout": _residual,
    "nn/activation": _residual,
}


def infer_shape(block_id: str, fields: dict, inputs: list) -> list | None:
    rule = RULES.get(block_id)
    if rule is None or not inputs:
        return None
    return rule(fields, inputs)
