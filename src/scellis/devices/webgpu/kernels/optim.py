"""Optimizer WGSL kernels (devices layer): fused in-place updates and the flat gather.

``<name>_update``: one invocation per element of the flat buffers; it reads the
gradient, the parameter and the state, and writes the parameter and the state
back (the targets are bound read_write). Every scalar, lr and the bias corrections
included, is an f32 word in meta (``ops.optim.scalars``, computed in double on the
host), so a changing lr reuses one pipeline; only the flags that add a state
buffer or a term (momentum, nesterov, amsgrad, centered) pick a kernel variant.

The multi-tensor form (``attrs["grads"]`` = k, the ``fast`` tier's): the k gradients
are bound as they lie, as many per launch as the binding limit allows, and each
invocation picks its element's gradient by the ranges in meta: one launch updates
every parameter of a group where flat_gather + update took two or more. Each element
reads the very gradient value the gather would have copied, so the update's bits are
the same. Where a target needs several binding windows (a flat buffer past 128 MiB)
each gradient gets its own update of its span instead, still without a gather.

``flat_gather``: copies many contiguous tensors into consecutive ranges of one
flat target, packing as many inputs per dispatch as the binding limit allows.
"""

from __future__ import annotations

from ....base.errors import ShapeError
from ....base.shapes import numel
from ....ops.fused_step import FACTOR, FINITE
from ....ops.optim import grad_count, reads_stats, scalars, state_names
from ...base import View
from .common import Source, _contiguous, f32_bits, grid_1d, main_1d, storage_itemsize


def _sgd(attrs) -> str:
    if attrs["momentum"] == 0:
        return "  st_p(ep, p + neg_lr * g);"
    step = "g + mom * buf" if attrs["nesterov"] else "buf"
    return (
        "  let buf = select(ld_momentum_buffer(e1) * mom + damp1 * g, g, first != 0.0);\n"
        "  st_momentum_buffer(e1, buf);\n"
        f"  st_p(ep, p + neg_lr * ({step}));"
    )


def _adam(attrs) -> str:
    lines = [
        "  let m = ld_exp_avg(e1) + w1 * (g - ld_exp_avg(e1));",
        "  var v = ld_exp_avg_sq(e2) * b2 + w2 * (g * g);",
        "  st_exp_avg(e1, m);",
        "  st_exp_avg_sq(e2, v);",
    ]
    if attrs["amsgrad"]:
        lines += ["  v = max(ld_max_exp_avg_sq(e3), v);", "  st_max_exp_avg_sq(e3, v);"]
    lines.append("  let denom = sqrt(v) / bc2_sqrt + eps;")
    lines.append("  st_p(ep, p * decay + neg_step_size * (m / denom));")
    return "\n".join(lines)


def _rmsprop(attrs) -> str:
    k = 2 if attrs["momentum"] > 0 else 1
    lines = ["  let sq = ld_square_avg(e1) * alpha + w * (g * g);", "  st_square_avg(e1, sq);"]
    if attrs["centered"]:
        lines += [
            f"  let ga = ld_grad_avg(e{k + 1}) + w * (g - ld_grad_avg(e{k + 1}));",
            f"  st_grad_avg(e{k + 1}, ga);",
            "  let avg = sqrt(sq - ga * ga) + eps;",
        ]
    else:
        lines.append("  let avg = sqrt(sq) + eps;")
    if attrs["momentum"] > 0:
        lines += [
            "  let buf = ld_momentum_buffer(e2) * mom + g / avg;",
            "  st_momentum_buffer(e2, buf);",
            "  st_p(ep, p + neg_lr * buf);",
        ]
    else:
        lines.append("  st_p(ep, p + neg_lr * (g / avg));")
    return "\n".join(lines)


def _lion(attrs) -> str:
    return (
        "  let m = ld_exp_avg(e1);\n"
        "  st_p(ep, p * decay + neg_lr * sign(m * b1 + w1 * g));\n"
        "  st_exp_avg(e1, m * b2 + w2 * g);"
    )


def _adagrad(attrs) -> str:
    # the accumulator starts at initial_accumulator_value: the first step reads that
    return (
        "  let s = select(ld_sum(e1), init, first != 0.0) + g * g;\n"
        "  st_sum(e1, s);\n"
        "  st_p(ep, p + neg_clr * (g / (sqrt(s) + eps)));"
    )


def _moments() -> list[str]:
    return [
        "  let m = ld_exp_avg(e1) + w1 * (g - ld_exp_avg(e1));",
        "  let v = ld_exp_avg_sq(e2) * b2 + w2 * (g * g);",
        "  st_exp_avg(e1, m);",
        "  st_exp_avg_sq(e2, v);",
    ]


def _nadam(attrs) -> str:
    lines = _moments() + [
        "  let denom = sqrt(v / bc2) + eps;",
        "  let p1 = p * decay + c_grad * (g / denom);",
        "  st_p(ep, p1 + c_avg * (m / denom));",
    ]
    return "\n".join(lines)


def _radam(attrs) -> str:
    # rectify is chosen on the host each step, so both branches share one pipeline
    lines = _moments() + [
        "  let adapt = select(1.0, bc2_sqrt / (sqrt(v) + eps), rectify != 0.0);",
        "  st_p(ep, p * decay + neg_step * (m * adapt));",
    ]
    return "\n".join(lines)


_BODIES = {
    "sgd_update": _sgd,
    "adam_update": _adam,
    "adamw_update": _adam,
    "rmsprop_update": _rmsprop,
    "lion_update": _lion,
    "adagrad_update": _adagrad,
    "nadam_update": _nadam,
    "radam_update": _radam,
}


def update(src: Source, op: str, ins, outs, attrs):
    """The update over ``ins`` (the gradient(s), then the gate) and ``outs`` (params and
    state); the multi-tensor form when ``attrs["grads"]`` > 1."""
    k = grad_count(attrs)
    if k > 1:
        return _multi_update(src, op, ins[:k], ins[k] if len(ins) > k else None, outs, attrs)
    return _flat_update(src, op, ins, outs, attrs)


def _flat_update(src: Source, op: str, ins, outs, attrs):
    """One launch over all n elements; or, where the operands' binding windows together
    pass maxStorageBuffersPerShaderStage (a large flat parameter buffer under the WebGPU
    spec's 128 MiB bindings), one launch per stretch of elements that stays inside one
    window of every operand, each binding just those windows: the same arithmetic per
    element, so the same bits. A gate (``ins[1]``, 0-d bool) makes every invocation
    return before it writes where the flag is False."""
    views = [ins[0], *outs]  # grad, param, states
    gate = ins[1] if len(ins) > 1 else None
    n = numel(views[0].shape)
    limit = src.limits["max_storage_buffers_per_shader_stage"]
    extra = 1 + (gate is not None)  # the meta words, the gate
    if sum(_bindings(v) for v in views) + extra <= limit:
        _update_launch(src, op, views, attrs, 0, n, None, gate)
        return grid_1d(n, src.limits)
    launches = []
    for lo, hi in _window_stretches(views, n):
        s = src if not launches else src.sibling()
        _update_launch(s, op, views, attrs, lo, hi, _window_of(views, lo), gate)
        launches.append((s, grid_1d(hi - lo, s.limits)))
    return launches


def _window_elems(view) -> int:
    return view.buf.handle.window_bytes // storage_itemsize(view.dtype)


def _window_stretches(views, n: int) -> list[tuple[int, int]]:
    """[lo, hi) element ranges, cut wherever any operand's window ends."""
    cuts = {0, n}
    for v in views:
        w = _window_elems(v)
        first = -(-v.offset // w) * w - v.offset  # the first cut past the view's start
        cuts.update(range(first if first > 0 else w, n, w))
    edges = sorted(cuts)
    return list(zip(edges[:-1], edges[1:]))


def _window_of(views, lo: int) -> list[int]:
    return [(v.offset + lo) // _window_elems(v) for v in views]


def _gate_lines(src: Source, gate, attrs) -> tuple[list, str]:
    """The early return of a gated update and the factor every gradient element takes:
    the gate (a 0-d bool), or grad_stats' result (its finite flag and clip factor)."""
    if gate is None:
        return [], ""
    if reads_stats(attrs):
        src.operand("gs", gate)
        at = src.add_meta(gate.offset)
        return [
            f"  if (ld_gs(mt[{at}u] + {FINITE}u) == 0.0) {{ return; }}",
            f"  let clip = ld_gs(mt[{at}u] + {FACTOR}u);",
        ], " * clip"
    src.operand("ok", gate)
    at = src.add_meta(gate.offset)
    return [f"  if (ld_ok(mt[{at}u]) == 0u) {{ return; }}"], ""


def _update_launch(src: Source, op: str, views, attrs, lo: int, hi: int, windows, gate=None):
    grad, param, *state = views
    win = windows or [None] * len(views)
    src.add_meta(hi - lo)
    src.operand("g", grad, window=win[0])
    src.operand("p", param, write=True, window=win[1])
    for k, (name, view) in enumerate(zip(state_names(op, attrs), state)):
        src.operand(name, view, write=True, window=win[2 + k])
    offs = src.add_meta(*(v.offset + lo for v in views))
    lines, factor = _gate_lines(src, gate, attrs)
    lines += [f"  let eg = mt[{offs}u] + i;", f"  let ep = mt[{offs + 1}u] + i;"]
    lines += [f"  let e{k + 1} = mt[{offs + 2 + k}u] + i;" for k in range(len(state))]
    _update_tail(src, op, attrs, lines, f"(ld_g(eg){factor})" if factor else "ld_g(eg)")


# the attrs that reach an update kernel only as scalar meta words, never in its text or
# launches: a replayed step's update with other values of these alone keeps its
# recorded launches, with the scalar words rewritten (``rescaled_meta``)
SCALAR_ONLY_ATTRS = frozenset({"lr", "step"})


def rescalable(op: str, recorded: dict, attrs: dict) -> bool:
    """Whether ``op`` launched with ``recorded`` attrs serves ``attrs`` by its scalar
    words alone: an update whose attrs differ only in SCALAR_ONLY_ATTRS."""
    keys = recorded.keys() | attrs.keys()
    changed = {k for k in keys if recorded.get(k) != attrs.get(k)}
    return op in _BODIES and changed <= SCALAR_ONLY_ATTRS


def rescaled_meta(op: str, attrs: dict, meta: list) -> list:
    """An update launch's meta words with ``attrs``'s scalars: every launch's words end
    with them (``_update_tail`` adds them last)."""
    words = [f32_bits(v) for v in scalars(op, attrs).values()]
    return list(meta[: len(meta) - len(words)]) + words


def _update_tail(src, op: str, attrs: dict, lines: list, grad: str) -> None:
    """The update's scalars as meta words, the parameter, the gradient ``grad`` (maximize
    flips it; L2 weight decay adds wd * p, 0 for the decoupled forms), then the op's body:
    the end every update kernel shares, one tensor at a time or many at once."""
    for name, value in scalars(op, attrs).items():
        at = src.add_meta(f32_bits(value))
        lines.append(f"  let {name} = bitcast<f32>(mt[{at}u]);")
    lines.append("  let p = ld_p(ep);")
    wd = " + wd * p" if "wd" in scalars(op, attrs) else ""
    lines.append(f"  let g = {grad} * gsign{wd};")
    lines.append(_BODIES[op](attrs))
    src.body = main_1d("\n".join(lines))


def _bindings(view) -> int:
    return len(view.buf.handle.windows())


def _span(view, start: int, n: int):
    return View(view.buf, (n,), (1,), view.offset + start, view.dtype)


def _multi_update(src: Source, op: str, grads, gate, targets, attrs):
    for g in grads:
        if not _contiguous(g):
            raise ShapeError(f"{op} reads contiguous gradients; call .contiguous() first")
    single = {key: v for key, v in attrs.items() if key != "grads"}
    if any(_bindings(v) > 1 for v in (*grads, *targets)):
        return _per_gradient(src, op, grads, gate, targets, single)
    budget = src.limits["max_storage_buffers_per_shader_stage"] - len(targets) - 1
    budget -= gate is not None
    launches, pack, at = [], [], 0
    for g in grads:
        if len(pack) == budget:
            launches.append(_multi_launch(src, launches, op, pack, gate, targets, single))
            pack = []
        pack.append((g, at))
        at += numel(g.shape)
    launches.append(_multi_launch(src, launches, op, pack, gate, targets, single))
    return launches


def _per_gradient(src: Source, op: str, grads, gate, targets, attrs) -> list:
    """One single-gradient update per gradient over its span of the targets."""
    launches, at = [], 0
    for g in grads:
        n = numel(g.shape)
        flat = View(g.buf, (n,), (1,), g.offset, g.dtype)
        views = [_span(t, at, n) for t in targets]
        s = src if not launches else src.sibling()
        got = _flat_update(s, op, [flat] + ([gate] if gate is not None else []), views, attrs)
        launches += got if isinstance(got, list) else [(s, got)]
        at += n
    return launches


def _multi_launch(src: Source, launches, op: str, pack, gate, targets, attrs):
    """One launch over the target elements of the gradients in ``pack`` ((view, start)
    pairs, consecutive); element i reads its gradient from the range it falls in."""
    s = src if not launches else src.sibling()
    start = pack[0][1]
    total = pack[-1][1] + numel(pack[-1][0].shape) - start
    s.add_meta(total)
    param, *state = targets
    s.operand("p", param, write=True)
    for name, view in zip(state_names(op, attrs), state):
        s.operand(name, view, write=True)
    offs = s.add_meta(*(v.offset + start for v in targets))
    lines, factor = _gate_lines(s, gate, attrs)
    lines.append(f"  let ep = mt[{offs}u] + i;")
    lines += [f"  let e{k + 1} = mt[{offs + 1 + k}u] + i;" for k in range(len(state))]
    lines.append("  var graw = 0.0;")
    last = len(pack) - 1
    for j, (g, at) in enumerate(pack):
        s.operand(f"g{j}", g)
        lo = s.add_meta(at - start, at - start + numel(g.shape), g.offset)
        read = f"{{ graw = ld_g{j}(mt[{lo + 2}u] + i - mt[{lo}u]); }}"
        if last == 0:
            lines.append(f"  {read}")
        elif j == 0:
            lines.append(f"  if (i < mt[{lo + 1}u]) {read}")
        else:
            lines.append(f"  {'else' if j == last else f'else if (i < mt[{lo + 1}u])'} {read}")
    _update_tail(s, op, attrs, lines, f"(graw{factor})" if factor else "graw")
    return s, grid_1d(total, s.limits)


def flat_gather(src: Source, op: str, ins, outs, attrs):
    out = outs[0]
    for x in ins:
        if not _contiguous(x):
            raise ShapeError("flat_gather takes contiguous inputs; call .contiguous() first")
    budget = src.limits["max_storage_buffers_per_shader_stage"] - 1 - _bindings(out)
    launches, pack, used, at = [], [], 0, 0
    for x in ins:
        k = numel(x.shape)
        if k == 0:
            continue
        if pack and (used + _bindings(x) > budget):
            launches.append(_gather_launch(src, launches, pack, out))
            pack, used = [], 0
        pack.append((x, at))
        used += _bindings(x)
        at += k
    if pack:
        launches.append(_gather_launch(src, launches, pack, out))
    return launches


def _gather_launch(src: Source, launches, pack, out):
    s = src if not launches else src.sibling()
    start = pack[0][1]
    total = pack[-1][1] + numel(pack[-1][0].shape) - start
    s.add_meta(total)
    s.operand("o", out, write=True)
    base = s.add_meta(out.offset + start)
    lines = [f"  let eo = mt[{base}u] + i;"]
    last = len(pack) - 1
    for j, (x, at) in enumerate(pack):
        s.operand(f"x{j}", x, widen=True)  # an f16 input widens into the f32 target
        lo = s.add_meta(at - start, at - start + numel(x.shape), x.offset)
        hi, off = lo + 1, lo + 2
        stmt = f"{{ st_o(eo, ld_x{j}(mt[{off}u] + i - mt[{lo}u])); }}"
        if last == 0:
            lines.append(f"  {stmt}")
        elif j == 0:
            lines.append(f"  if (i < mt[{hi}u]) {stmt}")
        elif j < last:
            lines.append(f"  else if (i < mt[{hi}u]) {stmt}")
        else:
            lines.append(f"  else {stmt}")
    s.body = main_1d("\n".join(lines))
    return s, grid_1d(total, s.limits)


KERNELS = {op: update for op in _BODIES}
KERNELS["flat_gather"] = flat_gather
