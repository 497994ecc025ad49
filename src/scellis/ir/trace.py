"""Tracing a record's model on the recording null device (ir layer).

The same Python that runs a model eagerly runs here on ``TracingBackend``: no data, but
every allocation, release, upload and primitive dispatch the real device would see,
in order, labelled with the phase (params, input, forward, loss, backward, optimizer)
and the record block that issued it. Because the code and so the Python object
lifetimes are the same, the buffer lifetimes recorded here are the ones the real
allocator sees: the memory planner's activation figures come from them.

A training trace runs two steps (the first creates the optimizer state; the second is
the steady state) of: zero_grad, forward, loss, backward, then the optimizer phase:
clipping and the step, or the caller's ``update`` (the CLI passes the train loop's
guarded update, so its copies are traced too). Loss scaling is not traced.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from ..autograd import no_grad
from ..base.dtypes import DType, f16, f32, i32
from ..base.errors import ScellisError
from ..base.rng import Generator
from ..base.shapes import contiguous_strides, numel
from ..catalog.clip import clip_grad_norm_, clip_grad_value_
from ..catalog.peft import apply_finetune
from ..catalog.registry import lookup
from ..devices.null import TracingBackend
from ..model.build import RecordModel, config_of
from ..runtime.tensor import Tensor
from .record import batch_size, concrete_inputs

# a target's (shape, dtype) from the prediction's, per loss; int class ids for CE
_TARGETS = {
    "training/loss/cross_entropy": lambda shape, dt: (shape[:-1], i32),
}


@dataclass
class Trace:
    """What one traced run asked of the device, and which buffers play which part."""

    record: dict
    batch: int
    mode: str  # "inference" | "training"
    precision: str
    events: list
    params: dict[int, str] = field(default_factory=dict)  # buffer serial -> name
    grads: set[int] = field(default_factory=set)
    state: set[int] = field(default_factory=set)  # optimizer state buffers
    saved: set[int] = field(default_factory=set)  # held by the tape for backward
    inputs: dict[int, str] = field(default_factory=dict)
    outputs: list[int] = field(default_factory=list)
    output_views: list[tuple] = field(default_factory=list)  # (shape, strides, offset)
    param_specs: dict[str, tuple] = field(default_factory=dict)  # name -> (shape, dtype)
    optimizer: str = ""
    n_params: int = 0
    block_shapes: dict[str, tuple] = field(default_factory=dict)  # block -> output shape
    # the traced model and optimizer: they outlive the trace's last mark, as a real run's
    # outlive its step, so their buffers show no release
    keep: tuple = field(default=(), repr=False)

    def allocs(self) -> dict[int, tuple]:
        """serial -> (numel, dtype, phase, scope) of every buffer the trace allocated."""
        return {e[1]: e[2:] for e in self.events if e[0] == "alloc"}

    def runs(self) -> list[tuple]:
        return [e for e in self.events if e[0] == "run"]


def serial(t: Tensor) -> int:
    return t._buf.handle.serial


def _input(dev: TracingBackend, shape, dtype: DType) -> Tensor:
    buf = dev.alloc(numel(shape), dtype)
    return Tensor(buf, shape, contiguous_strides(shape), 0, dtype, dev)


def _entry_obj(section: dict, kind: str, *args):
    entry = lookup(section.get("block_id", ""), kind)
    cfg = config_of(entry, section, kind)
    return entry.impl(*args, config=cfg) if args else entry.impl(config=cfg)


@contextlib.contextmanager
def _phase(dev, name: str, scope: str = ""):
    if not isinstance(dev, TracingBackend):  # a real device runs unlabelled
        yield
        return
    dev.phase, dev.scope = name, scope
    try:
        yield
    finally:
        dev.scope = ""


def _forward(model, dev, args, dtype, shapes: dict | None = None):
    """The model's own forward, with every block's dispatches labelled with its name (and
    its output shape noted): each block's ``forward`` is wrapped for the call."""
    if not isinstance(dev, TracingBackend):
        return model(*args)
    wrapped = []
    for name in model.order:
        mod = getattr(model, name)
        wrapped.append(mod)
        object.__setattr__(mod, "forward", _labelled(mod.forward, dev, name, shapes))
    try:
        return model(*args)
    finally:
        for mod in wrapped:
            object.__delattr__(mod, "forward")  # the class's forward again


def _labelled(fn, dev: TracingBackend, name: str, shapes: dict | None):
    def call(*a, **kw):
        outer, dev.scope = dev.scope, name
        try:
            out = fn(*a, **kw)
        finally:
            dev.scope = outer
        if shapes is not None and isinstance(out, Tensor) and dev.phase == "forward":
            shapes[name] = out.shape
        return out

    return call


@contextlib.contextmanager
def _working_copies(model, dtype):
    """Under mixed precision the forward reads f16 casts of the f32 master parameters
    (recorded casts, so gradients reach the masters), as the train layer's policy does."""
    if dtype == f32:
        yield
        return
    owners = dict(model.named_modules())
    swapped = []
    for path, p in model.named_parameters():
        owner, _, name = path.rpartition(".")
        if p.dtype.is_float and p.dtype != dtype:
            swapped.append((owners[owner], name, p))
            object.__setattr__(owners[owner], name, p.cast(dtype))
    try:
        yield
    finally:
        for mod, name, p in swapped:
            object.__setattr__(mod, name, p)


def _precision(record: dict, override: str | None) -> str:
    if override is not None:
        return override
    spec = record.get("precision")
    if isinstance(spec, dict):
        spec = spec.get("policy", "f32")
    return spec or "f32"


def _tape_buffers(root: Tensor) -> set[int]:
    """Buffers the tape below ``root`` holds for backward (node inputs and saved values)."""
    held, seen, stack = set(), set(), [root]
    while stack:
        t = stack.pop()
        node = t._node
        if node is None or id(t) in seen:
            continue
        seen.add(id(t))
        for x in node.inputs or ():
            if x is not None:
                held.add(serial(x))
                stack.append(x)
        for v in node.saved.values():
            if isinstance(v, Tensor):
                held.add(serial(v))
    return held


def trace(
    record: dict,
    *,
    mode: str = "training",
    batch: int | None = None,
    precision: str | None = None,
    steps: int = 2,
    supports_f16: bool = True,
    update=None,
    device: str = "webgpu",
) -> Trace:
    """Trace ``record``'s model: one inference forward, or ``steps`` training steps.

    ``device`` is the name the traced code sees: a block that picks its path by device
    (attention takes flash on webgpu) then takes the path it will take there."""
    dev = TracingBackend(supports_f16=supports_f16, name=device)
    b = batch_size(record, batch)
    tr = Trace(record, b, mode, _precision(record, precision), dev.events)
    keep = run_program(
        record, dev, mode=mode, batch=b, precision=tr.precision, steps=steps, tr=tr, update=update
    )
    tr.keep = keep
    return tr


def run_program(
    record: dict,
    dev,
    *,
    mode: str = "training",
    batch: int | None = None,
    precision: str | None = None,
    steps: int = 2,
    feed=None,
    tr: Trace | None = None,
    update=None,
):
    """Build ``record``'s model on ``dev`` and run what ``trace`` traces: one inference
    forward, or ``steps`` training steps. On a real device ``feed(dev, shape, dtype)``
    makes each input (it must allocate exactly one buffer, as a batch upload does); on
    the tracing device ``tr`` collects the bookkeeping. ``update(params, optimizer,
    clip)`` is the optimizer phase (default ``plain_update``); a caller above this layer
    passes its own (the train loop's guarded update) so the trace makes its requests.
    Returns (model, optimizer)."""
    if mode not in ("inference", "training"):
        raise ScellisError(f"trace mode is inference or training, not {mode!r}")
    b = batch_size(record, batch)
    prec = _precision(record, precision)
    if prec not in ("f32", "mixed_f16"):
        raise ScellisError(f"precision policy must be f32 or mixed_f16, got {prec!r}")
    feed = feed or _input
    compute = f16 if prec == "mixed_f16" else f32
    mark = dev.events.append if tr is not None else (lambda e: None)
    with _phase(dev, "params"):
        model = RecordModel(record, device=dev, gen=Generator(int(record.get("seed", 0)), "init"))
        if record.get("finetune"):  # frozen tensors get no gradient and no optimizer state
            apply_finetune(model, record["finetune"], seed=int(record.get("seed", 0)))
        optimizer = None
        if mode == "training":
            if not record.get("optimizer") or not record.get("loss"):
                raise ScellisError("a training trace needs the record's optimizer and loss")
            optimizer = _entry_obj(record["optimizer"], "optimizer", model)
            loss = _entry_obj(record["loss"], "loss")
    if tr is not None:
        tr.optimizer = (record.get("optimizer") or {}).get("block_id", "") if optimizer else ""
        for name, p in model.named_parameters():
            tr.params[serial(p)] = name
            tr.param_specs[name] = (p.shape, p.dtype)
            tr.n_params += p.numel
    specs = concrete_inputs(record, b)
    if mode == "inference":
        model.eval()
        with _phase(dev, "input"):
            xs = [feed(dev, s, dt) for s, dt in specs.values()]
        with no_grad(), _phase(dev, "forward"), _working_copies(model, compute):
            if tr is not None:
                tr.inputs = {serial(x): n for x, n in zip(xs, specs)}
            xs = [x.cast(compute) if x.dtype.is_float and x.dtype != compute else x for x in xs]
            out = _forward(model, dev, xs, compute, tr.block_shapes if tr else None)
        outs = out if isinstance(out, tuple) else (out,)
        if tr is not None:
            tr.outputs = [serial(o) for o in outs]
            tr.output_views = [(o.shape, o.strides, o.offset) for o in outs]
        mark(("mark", "end"))
        return model, None
    model.train()
    clip = _clipper(record.get("grad_clip"))
    for step in range(steps):
        mark(("mark", f"step {step}"))
        with _phase(dev, "input"):
            xs = [feed(dev, s, dt) for s, dt in specs.values()]
        with _phase(dev, "forward"):
            optimizer.zero_grad()
            with _working_copies(model, compute):
                fx = [x.cast(compute) if x.dtype.is_float and x.dtype != compute else x for x in xs]
                pred = _forward(model, dev, fx, compute)
        if isinstance(pred, tuple):
            raise ScellisError("training traces take a model with one output")
        with _phase(dev, "loss"):
            if pred.dtype == f16:
                pred = pred.cast(f32)
            make = _TARGETS.get(record["loss"].get("block_id", ""), lambda s, d: (s, d))
            yshape, ydt = make(pred.shape, pred.dtype)
            y = feed(dev, yshape, ydt)
            value = loss(pred, y)
        if tr is not None:
            tr.saved |= _tape_buffers(value)
            if step == steps - 1:  # the graph shows the last (steady-state) step
                tr.inputs = {serial(x): n for x, n in zip(xs, specs)} | {serial(y): "target"}
                tr.outputs = [serial(pred)]
                tr.output_views = [(pred.shape, pred.strides, pred.offset)]
        with _phase(dev, "backward"):
            value.backward()
        with no_grad(), _phase(dev, "optimizer"):
            (update or plain_update)(model.parameters(), optimizer, clip)
        del xs, fx, pred, y, value
    if tr is not None:
        for p in model.parameters():
            if p.grad is not None:
                tr.grads.add(serial(p.grad))
        for grp in optimizer._groups:  # the driver's flat buffers: gradients and state
            if grp.grad_flat is not None:
                tr.grads.add(serial(grp.grad_flat))
            tr.state |= {serial(t) for t in grp.state.values()}
        tr.saved -= set(tr.params) | set(tr.inputs)
    mark(("mark", "end"))
    return model, optimizer


def plain_update(params, optimizer, clip) -> None:
    """The optimizer phase without the train loop's overflow guard: clip, then step."""
    if clip is not None:
        clip(params)
    optimizer.step()


def _clipper(spec):
    if spec is None:
        return None
    spec = {"max_norm": spec} if isinstance(spec, (int, float)) else dict(spec)
    if "max_norm" in spec:
        n, t = float(spec["max_norm"]), float(spec.get("norm_type", 2.0))
        return lambda ps: clip_grad_norm_(ps, n, t)
    if "max_value" in spec:
        v = float(spec["max_value"])
        return lambda ps: clip_grad_value_(ps, v)
    raise ScellisError("grad_clip takes max_norm (and norm_type) or max_value")
