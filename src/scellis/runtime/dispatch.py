"""Dispatch (runtime layer): apply one primitive to tensors and record it on the tape.

Shapes and dtypes come from the op table; outputs are allocated here, contiguous;
the device only runs. View ops never reach a device.
"""

from __future__ import annotations

from ..autograd.mode import is_grad_enabled
from ..autograd.rules import SAVES_OUTPUT
from ..autograd.tape import Node
from ..base.errors import DeviceError, DTypeError
from ..base.shapes import contiguous_strides, numel
from ..devices.base import Backend, View, get_device
from ..ops.table import Spec, get_op
from .tensor import Tensor

_default = {"device": "reference"}


def set_default_device(name: str) -> None:
    """Device for tensors created without ``device=`` (``reference``, ``webgpu``, ``null``)."""
    get_device(name)  # fail now, with the reason, rather than at first use
    _default["device"] = name


def default_device() -> Backend:
    return get_device(_default["device"])


def _record(op: str, inputs: tuple, attrs: dict, out) -> None:
    opdef = get_op(op)
    if not opdef.diff_inputs or not is_grad_enabled():
        return
    diff = set(range(len(inputs))) if opdef.diff_inputs == (-1,) else set(opdef.diff_inputs)
    needs = tuple(i in diff and t is not None and t.requires_grad for i, t in enumerate(inputs))
    if not any(needs):
        return
    if not out.dtype.is_float:
        return
    node = Node(op, inputs, attrs, needs, out.shape, out.dtype)
    if op in SAVES_OUTPUT:
        node.saved["out"] = out.detach()
    out._node = node
    out.requires_grad = True


def _device_of(inputs) -> Backend:
    dev = None
    for t in inputs:
        if dev is None:
            dev = t.device
        elif t.device is not dev:
            raise DeviceError(f"inputs live on different devices: {dev.name} and {t.device.name}")
    return dev


def apply(op: str, inputs: tuple = (), device: Backend | None = None, **attrs):
    """Run primitive ``op`` on ``inputs`` and return the result Tensor."""
    opdef = get_op(op)
    specs = [Spec(t.shape, t.dtype) for t in inputs]
    (spec,) = opdef.infer(specs, attrs)
    dev = device or (_device_of(inputs) if inputs else default_device())
    if not dev.supports(spec.dtype) or any(not dev.supports(s.dtype) for s in specs):
        raise DTypeError(f"device {dev.name!r} does not support {spec.dtype}")
    if opdef.is_view:
        raise DeviceError(f"{op} is a view op; use Tensor.{op}")
    buf = dev.alloc(numel(spec.shape), spec.dtype)
    strides = contiguous_strides(spec.shape)
    out_view = View(buf, spec.shape, strides, 0, spec.dtype)
    dev.run(op, [t.view for t in inputs], [out_view], attrs)
    out = Tensor(buf, spec.shape, strides, 0, spec.dtype, dev)
    _record(op, tuple(inputs), attrs, out)
    return out


def apply_view(op: str, x, geom_shape, geom_strides, offset, **attrs):
    """Make a view of ``x`` with new geometry, recorded like any op."""
    out = Tensor(x._buf, tuple(geom_shape), tuple(geom_strides), offset, x.dtype, x.device)
    (spec,) = get_op(op).infer([Spec(x.shape, x.dtype)], attrs)
    assert spec.shape == out.shape, (op, spec.shape, out.shape)
    _record(op, (x,), attrs, out)
    return out


def apply_inplace(op: str, inputs: tuple, targets: tuple, **attrs) -> None:
    """Run ``op`` writing into existing tensors ``targets`` (optimizer updates, state).

    The op's outputs are the targets: a kernel may read their current values and
    overwrite them; ``inputs`` are read-only and must not alias a target. Nothing is
    recorded on the tape, so it is refused while a target needs a gradient in a
    recording context.
    """
    opdef = get_op(op)
    specs = [Spec(t.shape, t.dtype) for t in inputs]
    outs = opdef.infer(specs + [Spec(t.shape, t.dtype) for t in targets], attrs)
    if len(outs) != len(targets):
        raise DeviceError(f"{op} writes {len(outs)} tensors, {len(targets)} targets given")
    for t, s in zip(targets, outs):
        if (t.shape, t.dtype) != (s.shape, s.dtype) or not t.is_contiguous():
            raise DeviceError(f"{op}: target {t.shape}/{t.dtype} does not match {s}")
    if is_grad_enabled() and any(t.requires_grad for t in targets):
        raise DeviceError(f"in-place {op} on a tensor that requires grad; use no_grad()")
    bufs = {id(t._buf) for t in targets}
    if any(id(t._buf) in bufs for t in inputs):
        raise DeviceError(f"in-place {op}: an input aliases a target")
    dev = _device_of(tuple(inputs) + tuple(targets))
    dev.run(op, [t.view for t in inputs], [t.view for t in targets], attrs)
