"""Tracing a record's model on the recording null device (ir layer).

The same Python that runs a model eagerly runs here on ``TracingBackend``: no data, but
every allocation, release, upload and primitive dispatch the real device would see,
in order, labelled with the phase (params, input, forward, loss, backward, optimizer)
and the record block that issued it. Because the code and so the Python object
lifetimes are the same, the buffer lifetimes recorded here are the ones the real
allocator sees: the memory planner's activation figures come from them.

A training trace runs two steps (the first creates the optimizer state; the second is
the steady state) of ``step.train_step``, the function the train loop runs: zero_grad,
forward, loss, backward, then the optimizer phase: clipping and the step, or the
caller's ``update`` (``run.planning`` passes the loop's guarded update, so its
copies are traced too). The loss is not scaled in the trace (the update still
unscales the gradients where the loop would).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from ..autograd import no_grad
from ..autograd.tape import Edge
from ..autograd.tape import key as tape_key
from ..base.dtypes import DType, f16, f32, i32
from ..base.errors import ScellisError
from ..base.shapes import contiguous_strides, numel
from ..catalog.clip import clipper
from ..devices.null import TracingBackend
from ..model.build import RecordModel, entry_object
from ..model.finetune import build_model
from ..model.param_groups import optimizer_of
from ..runtime.tensor import Tensor
from ..train.step import plain_update, to_compute, train_step, working_copies
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
    # the model's buffers (running statistics, an imported graph's data constants):
    # made with the model, read by the forward, never trained
    buffers: dict[int, str] = field(default_factory=dict)
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


@contextlib.contextmanager
def _blocks_labelled(model, dev, shapes: dict | None = None):
    """Within the block, every record block's dispatches are labelled with its name (and
    its output shape noted in ``shapes``): each block's ``forward`` is wrapped."""
    if not isinstance(dev, TracingBackend):
        yield
        return
    wrapped = []
    for name in model.order:
        mod = getattr(model, name)
        wrapped.append(mod)
        object.__setattr__(mod, "forward", _labelled(mod.forward, dev, name, shapes))
    try:
        yield
    finally:
        for mod in wrapped:
            object.__delattr__(mod, "forward")  # the class's forward again


@contextlib.contextmanager
def _step_phase(dev, model, name: str):
    """A training step's phase on ``dev``; the forward's dispatches carry their block."""
    with _phase(dev, name):
        if name != "forward":
            yield
            return
        with _blocks_labelled(model, dev):
            yield


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


def _precision(record: dict, override: str | None) -> str:
    if override is not None:
        return override
    spec = record.get("precision")
    if isinstance(spec, dict):
        spec = spec.get("policy", "f32")
    return spec or "f32"


def _tape_buffers(root: Tensor) -> set[int]:
    """Buffers the tape below ``root`` holds for backward: the input values nodes keep
    and their saved values (an input held as an ``Edge`` keeps no storage)."""
    held, seen, stack = set(), set(), [root]
    while stack:
        t = stack.pop()
        node = t._node
        if node is None or tape_key(t) in seen:
            continue
        seen.add(tape_key(t))
        for x in node.inputs or ():
            if x is not None:
                if not isinstance(x, Edge):
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
    with_loss: bool = False,
) -> Trace:
    """Trace ``record``'s model: one inference forward, or ``steps`` training steps.

    ``device`` is the name the traced code sees: a block that picks its path by device
    (attention takes flash on webgpu) then takes the path it will take there.
    ``with_loss``: the inference forward is a validation batch's, its loss computed on
    the targets as the loop's validation pass does."""
    if mode not in ("inference", "training"):
        raise ScellisError(f"trace mode is inference or training, not {mode!r}")
    dev = TracingBackend(supports_f16=supports_f16, name=device)
    b = batch_size(record, batch)
    tr = Trace(record, b, mode, _precision(record, precision), dev.events)
    if mode == "inference":
        tr.keep = run_inference(record, dev, batch=b, precision=tr.precision, tr=tr,
                                with_loss=with_loss)  # fmt: skip
    else:
        tr.keep = run_training(
            record, dev, batch=b, precision=tr.precision, steps=steps, tr=tr, update=update
        )
    return tr


def _compute_dtype(record: dict, precision: str | None) -> DType:
    """The dtype the forward computes in, from the record's policy or ``precision``."""
    prec = _precision(record, precision)
    if prec not in ("f32", "mixed_f16"):
        raise ScellisError(f"precision policy must be f32 or mixed_f16, got {prec!r}")
    return f16 if prec == "mixed_f16" else f32


def _build_model(record: dict, dev) -> RecordModel:
    """``record``'s model on ``dev``, fine-tune adapters applied (the caller opens the
    ``params`` phase around it)."""
    # as a real run builds it: a quantised base is encoded a block at a time, so the
    # trace's construction holds what the device will (frozen tensors get no gradient
    # and no optimizer state)
    return build_model(record, device=dev)[0]


def _note_model(tr: Trace | None, model) -> None:
    """``tr`` notes the model's parameters and buffers (nothing on a real device)."""
    if tr is None:
        return
    for name, p in model.named_parameters():
        tr.params[serial(p)] = name
        tr.param_specs[name] = (p.shape, p.dtype)
        tr.n_params += p.numel
    tr.buffers = {serial(t): name for name, t in model.named_buffers()}


def _marker(dev, tr: Trace | None):
    return dev.events.append if tr is not None else (lambda e: None)


def run_inference(
    record: dict,
    dev,
    *,
    batch: int | None = None,
    precision: str | None = None,
    feed=None,
    tr: Trace | None = None,
    with_loss: bool = False,
):
    """Build ``record``'s model on ``dev`` and run one inference forward (what an
    inference ``trace`` traces), and its loss on targets when ``with_loss``. On a real
    device ``feed(dev, shape, dtype)`` makes each input (it must allocate exactly one
    buffer, as a batch upload does); on the tracing device ``tr`` collects the
    bookkeeping. Returns (model, None)."""
    b = batch_size(record, batch)
    compute = _compute_dtype(record, precision)
    feed = feed or _input
    with _phase(dev, "params"):
        model = _build_model(record, dev)
    _note_model(tr, model)
    specs = concrete_inputs(record, b)
    model.eval()
    with _phase(dev, "input"):
        xs = [feed(dev, s, dt) for s, dt in specs.values()]
    with no_grad(), _phase(dev, "forward"), working_copies(model, compute):
        if tr is not None:
            tr.inputs = {serial(x): n for x, n in zip(xs, specs)}
        xs = to_compute(xs, compute)
        with _blocks_labelled(model, dev, tr.block_shapes if tr else None):
            out = model(*xs)
        if with_loss and record.get("loss") and not isinstance(out, tuple):
            _validation_loss(record, dev, out, b, feed)
    outs = out if isinstance(out, tuple) else (out,)
    if tr is not None:
        tr.outputs = [serial(o) for o in outs]
        tr.output_views = [(o.shape, o.strides, o.offset) for o in outs]
    _marker(dev, tr)(("mark", "end"))
    return model, None


def _validation_loss(record: dict, dev, pred, rows: int, feed) -> None:
    """The validation pass's loss of one batch (train/evaluation.py): the targets
    uploaded, the loss in f32, scaled by the batch's rows."""
    loss = entry_object(record["loss"], "loss")
    target_of = _TARGETS.get(record["loss"].get("block_id", ""), lambda s, d: (s, d))
    with _phase(dev, "input"):
        y = feed(dev, *target_of(pred.shape, pred.dtype))
    if pred.dtype == f16:
        pred = pred.cast("f32")
    loss(pred, y) * float(rows)


def run_training(
    record: dict,
    dev,
    *,
    batch: int | None = None,
    precision: str | None = None,
    steps: int = 2,
    feed=None,
    tr: Trace | None = None,
    update=None,
):
    """Build ``record``'s model, optimizer and loss on ``dev`` and run ``steps`` training
    steps (what a training ``trace`` traces). ``feed`` and ``tr`` as ``run_inference``.
    ``update(params, optimizer, clip)`` is the optimizer phase (default
    ``plain_update``); a caller above this layer passes its own (the train loop's
    guarded update) so the trace makes its requests. Returns (model, optimizer)."""
    b = batch_size(record, batch)
    compute = _compute_dtype(record, precision)
    feed = feed or _input
    mark = _marker(dev, tr)
    with _phase(dev, "params"):
        model = _build_model(record, dev)
        if not record.get("optimizer") or not record.get("loss"):
            raise ScellisError("a training trace needs the record's optimizer and loss")
        optimizer = optimizer_of(record["optimizer"], model)
        loss = entry_object(record["loss"], "loss")
    _note_model(tr, model)
    if tr is not None:
        tr.optimizer = record["optimizer"].get("block_id", "")
    specs = concrete_inputs(record, b)
    model.train()
    clip = clipper(record.get("grad_clip"))
    target_of = _TARGETS.get(record["loss"].get("block_id", ""), lambda s, d: (s, d))

    def make_target(pred):
        if isinstance(pred, tuple):
            raise ScellisError("training traces take a model with one output")
        yshape, ydt = target_of(pred.shape, pred.dtype)
        return feed(dev, yshape, ydt)

    for step in range(steps):
        mark(("mark", f"step {step}"))
        with _phase(dev, "input"):
            xs = [feed(dev, s, dt) for s, dt in specs.values()]

        def observe(pred, y, value, last=step == steps - 1, xs=xs):
            if tr is None:
                return
            tr.saved |= _tape_buffers(value)
            if last:  # the graph shows the last (steady-state) step
                tr.inputs = {serial(x): n for x, n in zip(xs, specs)} | {serial(y): "target"}
                tr.outputs = [serial(pred)]
                tr.output_views = [(pred.shape, pred.strides, pred.offset)]

        # the train loop's own step function (train/step.py), with the caller's update
        train_step(
            model, loss, optimizer, xs, None, update=update or plain_update, clip=clip,
            compute=compute, phase=lambda name: _step_phase(dev, model, name),
            observe=observe, make_target=make_target,
        )  # fmt: skip
        del xs, observe
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
