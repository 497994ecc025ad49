"""One training step's order, written once (train layer): the loop runs it, the planner traces it.

``train_step`` is one step's device work: zero the gradients, the forward under
the precision policy's working copies, the loss in f32, the backward of the
(optionally scaled) loss, then the caller's optimizer phase under ``no_grad``. The
train loop calls it with its guarded update and loss scale; the memory planner's
tracer (``ir.trace.run_training``, a layer above) calls it on the recording null
device with the update ``loop_update_for`` gives for the record, labelling each
phase. Because both run this function, the plan cannot count a different step than
the one that runs.
"""

from __future__ import annotations

import contextlib

from ..autograd import no_grad
from ..base.dtypes import f16, f32
from ..catalog.module_precision import to_compute, working_copies  # noqa: F401 (the step's)
from ..runtime.creation import full
from ..runtime.tensor import Tensor
from .guard import loop_update
from .precision import widen_gradients


def unlabelled(name: str):
    """The default ``phase``: a real run labels nothing."""
    return contextlib.nullcontext()


def plain_update(params, optimizer, clip) -> None:
    """An optimizer phase without the train loop's overflow guard: clip, then step."""
    if clip is not None:
        clip(params)
    optimizer.step()


def _loss_scaled(record: dict) -> bool:
    spec = record.get("precision")
    if isinstance(spec, dict):
        scaling = spec.get("loss_scaling", "dynamic")
        return spec.get("policy") == "mixed_f16" and scaling != "none"
    return spec == "mixed_f16"


def loop_update_for(record: dict):
    """The loop's optimizer phase (overflow guard, clipping, the step) for ``record``'s
    precision policy: what the planner traces so that it counts the loop's copies."""
    if not _loss_scaled(record):
        return loop_update

    def update(params, optimizer, clip):
        # the loop divides the gradients by its 0-d device scale (new gradient tensors)
        scale = full((), 2.0**16, f32, params[0].device)
        return loop_update(params, optimizer, clip, scale=scale)

    return update


def train_step(
    model,
    loss,
    optimizer,
    inputs,
    y,
    *,
    update=plain_update,
    clip=None,
    compute=f32,
    scale: Tensor | None = None,
    phase=unlabelled,
    observe=None,
    make_target=None,
):
    """One training step; returns (the loss value, what ``update`` returned).

    ``inputs`` are the model's positional inputs (a tuple), ``y`` the target; with
    ``make_target``, the target is ``make_target(pred)`` instead, made inside the loss
    phase (the tracer makes one of the prediction's shape). ``scale``
    multiplies the loss before backward (loss scaling). ``update(params, optimizer,
    clip)`` is the optimizer phase. ``phase(name)`` is a context manager around each
    phase (forward, loss, backward, optimizer); ``observe(pred, y, value)`` sees
    the prediction, the target and the loss before backward (the tracer reads the tape there)."""
    with phase("forward"):
        optimizer.zero_grad()
        # the masters' gradients arrive in the compute dtype and are widened together
        with working_copies(model, compute, grads_as_copies=True):
            pred = model(*to_compute(tuple(inputs), compute))
    with phase("loss"):
        if isinstance(pred, Tensor) and pred.dtype == f16:
            pred = pred.cast(f32)  # the loss and its reductions run in f32
        if make_target is not None:
            y = make_target(pred)
        value = loss(pred, y)
    if observe is not None:
        observe(pred, y, value)
    with phase("backward"):
        (value * scale if scale is not None else value).backward()
        widen_gradients(model.parameters())
    with no_grad(), phase("optimizer"):
        done = update(model.parameters(), optimizer, clip)
    return value, done
