"""Dispatch (runtime layer): apply one primitive to Tensors, or write into existing ones.

The work is done by ``primitive``, which is generic over the tensor class; here it is
bound to ``Tensor``, so ``apply`` also makes the tensors of ops with no inputs.
"""

from __future__ import annotations

from ..base.errors import DeviceError
from ..devices.base import Backend
from ..ops.table import Spec, get_op
from .primitive import _device_of, apply_view, default_device, run_primitive, set_default_device
from .tensor import Tensor
from .write_guard import guard_write

__all__ = ["apply", "apply_inplace", "apply_view", "default_device", "set_default_device"]


def apply(op: str, inputs: tuple = (), device: Backend | None = None, **attrs) -> Tensor:
    """Run primitive ``op`` on ``inputs`` and return the result Tensor."""
    return run_primitive(Tensor, op, inputs, device, attrs)


def apply_inplace(op: str, inputs: tuple, targets: tuple, **attrs) -> None:
    """Run ``op`` writing into existing tensors ``targets`` (optimizer updates, state).

    The op's outputs are the targets: a kernel may read their current values and
    overwrite them; ``inputs`` are read-only and must not alias a target. Nothing is
    recorded on the tape, so each target passes the in-place guard (``write_guard``).
    """
    opdef = get_op(op)
    specs = [Spec(t.shape, t.dtype) for t in inputs]
    outs = opdef.infer(specs + [Spec(t.shape, t.dtype) for t in targets], attrs)
    if len(outs) != len(targets):
        raise DeviceError(f"{op} writes {len(outs)} tensors, {len(targets)} targets given")
    for t, s in zip(targets, outs):
        if (t.shape, t.dtype) != (s.shape, s.dtype) or not t.is_contiguous():
            raise DeviceError(f"{op}: target {t.shape}/{t.dtype} does not match {s}")
    bufs = {id(t._buf) for t in targets}
    if any(id(t._buf) in bufs for t in inputs):
        raise DeviceError(f"in-place {op}: an input aliases a target")
    for t in targets:
        guard_write(t, f"in-place {op}")
    dev = _device_of(tuple(inputs) + tuple(targets))
    dev.run(op, [t.device_view for t in inputs], [t.device_view for t in targets], attrs)
