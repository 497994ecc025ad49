"""A module's forward in another float dtype (catalog layer): f16 working copies.

One place for what ``mixed_f16`` runs and what torch's ``autocast`` maps onto: every
float parameter attribute swapped for its recorded cast (so gradients reach the f32
master the optimizer owns) and float inputs cast, for the duration of a block.

Parameters that are views of one buffer (an optimizer's flat parameter buffer) are cast
in one dispatch: the span they cover is cast once and each working copy is a view of
the result, recorded on the tape as that parameter's own ``cast`` (its VJP casts the
gradient back to the master's dtype). A step of the d384 Transformer casts its 100-odd
weights in one pass instead of one dispatch each.
"""

from __future__ import annotations

import contextlib

from ..autograd import Node, is_grad_enabled, no_grad
from ..base.dtypes import f32
from ..base.shapes import contiguous_strides
from ..runtime.tensor import Tensor


@contextlib.contextmanager
def working_copies(model, dtype, *, grads_as_copies: bool = False):
    """Within the block, every float parameter attribute of ``model`` is its cast to
    ``dtype`` (recorded, so gradients reach the master); restored on exit. A module's
    ``full_precision`` names stay as they are (a quantised weight's scales).

    ``grads_as_copies``: a master's gradient arrives in ``dtype``, as its copy's did,
    instead of through a cast per parameter; the caller widens them (the training step
    does, all in one cast: ``train.precision.widen_gradients``)."""
    if dtype == f32:
        yield
        return
    owners = dict(model.named_modules())
    swapped = []
    for path, p in model.named_parameters():
        owner, _, name = path.rpartition(".")
        mod = owners[owner]
        keep = name in getattr(mod, "full_precision", ())
        if p.dtype.is_float and p.dtype != dtype and not keep:
            swapped.append((mod, name, p))
    copies = cast_together([p for _, _, p in swapped], dtype)
    for (mod, name, _), copy in zip(swapped, copies):
        if grads_as_copies and copy._node is not None:
            copy._node.rule = _gradient_as_is
        object.__setattr__(mod, name, copy)
    try:
        yield
    finally:
        for mod, name, p in swapped:
            object.__setattr__(mod, name, p)


def _gradient_as_is(node, g):
    """The VJP of a working copy whose master takes its gradient in the copy's dtype."""
    return (g,)


def cast_together(params: list[Tensor], dtype) -> list[Tensor]:
    """Each of ``params`` cast to ``dtype``, as recorded casts; the contiguous ones that
    share a buffer through one cast of the span they cover (``_cast_span``)."""
    by_buf: dict[int, list[int]] = {}
    for i, p in enumerate(params):
        if p.is_contiguous():
            by_buf.setdefault(id(p._buf), []).append(i)
    out: list[Tensor | None] = [None] * len(params)
    for idx in by_buf.values():
        if len(idx) > 1 and _dense([params[i] for i in idx]):
            for i, copy in zip(idx, _cast_span([params[i] for i in idx], dtype)):
                out[i] = copy
    return [p.cast(dtype) if c is None else c for p, c in zip(params, out)]


def _dense(params: list[Tensor]) -> bool:
    """Whether ``params`` fill at least half the span they cover: a cast of the span then
    moves at most twice what casting each would."""
    lo = min(p.offset for p in params)
    hi = max(p.offset + p.numel for p in params)
    return 2 * sum(p.numel for p in params) >= hi - lo


def _cast_span(params: list[Tensor], dtype) -> list[Tensor]:
    """Contiguous ``params`` of one buffer cast to ``dtype`` by one ``cast`` of the span
    from the first to the last of them (elements between them are cast too, unread)."""
    lo = min(p.offset for p in params)
    hi = max(p.offset + p.numel for p in params)
    first = params[0]
    span = Tensor(first._buf, (hi - lo,), (1,), lo, first.dtype, first.device)
    with no_grad():
        half = span.cast(dtype)
    record = is_grad_enabled()
    copies = []
    for p in params:
        shape = tuple(p.shape)
        c = Tensor(half._buf, shape, contiguous_strides(shape), half.offset + p.offset - lo,
                   half.dtype, half.device)  # fmt: skip
        if record and p.requires_grad:  # the tape sees ``p.cast(dtype)``: its VJP casts back
            c._node = Node("cast", (p,), {"dtype": dtype.name}, (True,), shape, half.dtype)
            c.requires_grad = True
        copies.append(c)
    return copies


def to_compute(x, dtype):
    """A float input tensor (or a tuple/list of them) cast to the compute dtype."""
    if isinstance(x, Tensor):
        return x.cast(dtype) if x.dtype.is_float and x.dtype != dtype else x
    if isinstance(x, (tuple, list)):
        return type(x)(to_compute(v, dtype) for v in x)
    return x


# the dtype a torch-style ``autocast`` block asks for, and whether a module call under
# it is already running (only the outermost call swaps the weights)
_autocast: dict = {"dtype": None, "inside": False}
_said: set = set()


def autocast_dtype():
    return _autocast["dtype"]


class autocast(contextlib.ContextDecorator):  # noqa: N801 (torch's name)
    """torch's ``autocast`` mapped onto ``mixed_f16``: inside the block, a module called
    from outside any other runs in f16 working copies of its weights and inputs, and
    its float outputs come back as f32 (so the loss is taken in f32). torch decides
    per op; here it is per outermost module call, said once as a warning. Only f16:
    there is no bfloat16 (torch's CPU default) on WebGPU."""

    def __init__(self, device_type: str = "cuda", dtype=None, enabled: bool = True,
                 cache_enabled=None):  # fmt: skip
        from ..base.dtypes import as_dtype, f16

        name = getattr(dtype, "name", dtype)
        if name in ("bfloat16", "bf16"):
            name = None  # the nearest there is: f16, said in the warning below
        self.dtype = as_dtype(name, f16) if enabled else None
        self._prev: list = []

    def __enter__(self):
        self._prev.append(_autocast["dtype"])
        _autocast["dtype"] = self.dtype
        if self.dtype is not None and "autocast" not in _said:
            _said.add("autocast")
            import warnings

            warnings.warn(
                "scellis maps autocast onto mixed_f16: each outermost module call runs "
                f"in {self.dtype} working copies of its weights, outputs cast to f32",
                stacklevel=2,
            )
        return self

    def __exit__(self, *exc):
        _autocast["dtype"] = self._prev.pop()
        return False


def call_autocast(module, call, args: tuple, kwargs: dict):
    """``call(*args, **kwargs)`` of ``module`` in the autocast dtype (see ``autocast``)."""
    dtype = _autocast["dtype"]
    _autocast["inside"] = True
    try:
        with working_copies(module, dtype):
            out = call(*to_compute(args, dtype), **kwargs)
    finally:
        _autocast["inside"] = False
    return _to_f32(out)


def autocast_applies() -> bool:
    return _autocast["dtype"] is not None and not _autocast["inside"]


def _to_f32(x):
    if isinstance(x, Tensor):
        return x.cast(f32) if x.dtype.is_float and x.dtype != f32 else x
    if isinstance(x, (tuple, list)):
        return type(x)(_to_f32(v) for v in x)
    return x
