"""Shape rules of the built-in blocks for SML validation (catalog layer).

Each rule takes the block's fields (defaults filled in) and its input shapes (lists
of ints or symbolic names) and returns the output shape, raising ShapeMismatch when
an input does not fit. Symbolic dims match anything; a block without a rule has an
unknown output shape, and blocks reading it are not shape-checked.
"""

from __future__ import annotations

from ..sml.registry import ShapeMismatch


def _last(shape: list, f: dict, key: str, min_rank: int = 1, rank: int | None = None) -> None:
    """The input's last dim must be field ``key`` of the block (named in the mismatch,
    so a one-click fix can set it to what the input gives)."""
    if rank is not None and len(shape) != rank:
        raise ShapeMismatch("rank", rank, len(shape))
    if len(shape) < min_rank:
        raise ShapeMismatch("rank at least", min_rank, len(shape))
    got, want = shape[-1], f[key]
    if isinstance(got, int) and isinstance(want, int) and got != want:
        raise ShapeMismatch("last dim", want, got, field=key)


def _feature(key: str, out_key: str):
    def rule(f, xs):
        _last(xs[0], f, key)
        return xs[0][:-1] + [f[out_key]]

    return rule


def _same(key: str):
    def rule(f, xs):
        _last(xs[0], f, key)
        return list(xs[0])

    return rule


def _recurrent(f, xs):
    _last(xs[0], f, "input_size", rank=3)
    x = xs[0]
    h = f["hidden_size"]
    if f.get("bidirectional") and isinstance(h, int):
        h *= 2  # both directions side by side
    return [x[0], h] if f["output"] == "last" else [x[0], x[1], h]


def _steps(t, span: int, stride: int, lo: int, hi: int):
    """Output steps of windows spanning ``span`` steps over ``t`` (symbolic stays symbolic,
    and so does ``t`` while a field is not filled in yet)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (t, span, stride, lo, hi)):
        return t
    if t + lo + hi < span:
        raise ShapeMismatch("a sequence of at least", span - lo - hi, t)
    return (t + lo + hi - span) // stride + 1


def _conv1d(f, xs):
    _last(xs[0], f, "in_channels", rank=3)
    k, d, stride, pad = f["kernel_size"], f["dilation"], f["stride"], f["padding"]
    x = xs[0]
    if not all(isinstance(v, int) for v in (k, d)):
        return [x[0], x[1], f["out_channels"]]
    total = d * (k - 1)
    if pad == "causal":
        lo, hi = total, 0
    elif pad == "same":
        lo, hi = total // 2, total - total // 2
    elif pad == "valid":
        lo = hi = 0
    elif isinstance(pad, int) and not isinstance(pad, bool):
        lo = hi = pad
    else:
        raise ShapeMismatch("padding", "an int, valid, same or causal", pad)
    return [x[0], _steps(x[1], total + 1, stride, lo, hi), f["out_channels"]]


def _pool1d(f, xs):
    x = xs[0]
    if len(x) != 3:
        raise ShapeMismatch("rank", 3, len(x))
    k, p = f["kernel_size"], f["padding"]
    if not isinstance(k, int):
        return list(x)
    return [x[0], _steps(x[1], k, f["stride"] or k, p, p), x[2]]


def _global_pool(f, xs):
    x = xs[0]
    if len(x) != 3:
        raise ShapeMismatch("rank", 3, len(x))
    return [x[0], x[2]]


def _pair(v):
    """An image size field as (rows, columns): an int is both; None while it is not
    a number or a pair of numbers (a field not filled in yet)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return (v, v)
    if isinstance(v, (list, tuple)) and len(v) == 2:
        if all(isinstance(a, int) and not isinstance(a, bool) for a in v):
            return (v[0], v[1])
    return None


def _image(x: list, f: dict, key: str | None) -> None:
    """``x`` is [B, C, H, W] and, where ``key`` is given, C is that field."""
    if len(x) != 4:
        raise ShapeMismatch("rank", 4, len(x))
    got, want = x[1], f[key] if key else None
    if isinstance(got, int) and isinstance(want, int) and got != want:
        raise ShapeMismatch("channels (axis 1)", want, got, field=key)


def _windows(x: list, channels, k, s, d, lo, hi) -> list:
    """[B, channels, H_out, W_out] of windows ``k`` (each size a pair, None: unknown)."""
    if None in (k, s, d, lo, hi):
        return [x[0], channels, x[2], x[3]]
    hw = [_steps(x[2 + a], d[a] * (k[a] - 1) + 1, s[a], lo[a], hi[a]) for a in (0, 1)]
    return [x[0], channels, *hw]


def _conv2d(f, xs):
    x = xs[0]
    _image(x, f, "in_channels")
    k, s, d, pad = _pair(f["kernel_size"]), _pair(f["stride"]), _pair(f["dilation"]), f["padding"]
    if None in (k, d):
        return [x[0], f["out_channels"], x[2], x[3]]
    if pad == "valid":
        lo = hi = (0, 0)
    elif pad == "same":
        if s != (1, 1):
            raise ShapeMismatch("stride with padding 'same'", 1, f["stride"])
        total = [d[a] * (k[a] - 1) for a in (0, 1)]
        lo, hi = (
            (total[0] // 2, total[1] // 2),
            (total[0] - total[0] // 2, total[1] - total[1] // 2),
        )
    elif (lo := _pair(pad)) is not None:
        hi = lo
    else:
        raise ShapeMismatch("padding", "an int, a pair, valid or same", pad)
    return _windows(x, f["out_channels"], k, s, d, lo, hi)


def _ceil_steps(t, span: int, stride: int, pad: int):
    """torch's ceil_mode count: one more window where the last one starts inside the
    input (or its leading padding)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (t, span, stride, pad)):
        return t
    n = -(-(t + 2 * pad - span) // stride) + 1
    n = n - 1 if (n - 1) * stride >= t + pad else n
    if n < 1:
        raise ShapeMismatch("a sequence of at least", span - 2 * pad - stride + 1, t)
    return n


def _pool2d(f, xs):
    x = xs[0]
    _image(x, f, None)
    k, p = _pair(f["kernel_size"]), _pair(f["padding"])
    s = k if f["stride"] is None else _pair(f["stride"])
    if not f.get("ceil_mode") or None in (k, s, p):
        return _windows(x, x[1], k, s, (1, 1), p, p)
    return [x[0], x[1], *(_ceil_steps(x[2 + a], k[a], s[a], p[a]) for a in (0, 1))]


def _batch_norm2d(f, xs):
    _image(xs[0], f, "num_features")
    return list(xs[0])


def _tcn(f, xs):
    _last(xs[0], f, "in_channels", rank=3)
    return xs[0][:-1] + [f["channels"]]


def _head(n_key: str):
    def rule(f, xs):
        x = xs[0]
        _last(x, f, "in_features", min_rank=3 if f["pool"] != "none" else 1)
        keep = x[:-2] if f["pool"] != "none" else x[:-1]
        return keep + [f[n_key]]

    return rule


def _mlp(f, xs):
    _last(xs[0], f, "in_features")
    return xs[0][:-1] + [f["out_features"] or f["in_features"]]


def _position(f, xs):
    x = xs[0]
    _last(x, f, "dim", min_rank=2)
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
    "nn/conv1d": _conv1d,
    "nn/tcn": _tcn,
    "nn/max_pool1d": _pool1d,
    "nn/avg_pool1d": _pool1d,
    "nn/global_pool1d": _global_pool,
    "nn/batch_norm1d": _same("num_features"),
    "nn/conv2d": _conv2d,
    "nn/max_pool2d": _pool2d,
    "nn/avg_pool2d": _pool2d,
    "nn/batch_norm2d": _batch_norm2d,
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
