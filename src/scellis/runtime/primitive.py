"""Applying one primitive (runtime layer): run it on a device and record it on the tape.

Generic over the tensor class: outputs are made with the class the caller names (the
class of the inputs, for Tensor's own methods), so this module sits below ``tensor``
and the method mixins can call it. ``dispatch.apply`` binds it to ``Tensor``.
Shapes and dtypes come from the op table; outputs are allocated here, contiguous;
the device only runs. View ops never reach a device.
"""

from __future__ import annotations

from ..autograd.mode import is_grad_enabled
from ..autograd.rules import SAVES_OUTPUT, reads
from ..autograd.tape import Node
from ..base.errors import DeviceError, DTypeError
from ..base.shapes import contiguous_strides, numel
from ..devices.base import Backend, View, get_device
from ..ops.table import Spec, get_op
from .kernel_choice import with_order

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
    # the node keeps an input's value only where the op's VJP reads it (autograd.tape)
    node = Node(op, inputs, attrs, needs, out.shape, out.dtype, reads(op, needs, attrs))
    if op in SAVES_OUTPUT:
        node.saved["out"] = out.detach()
        node.out_version = out._version
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


def run_primitive(out_type: type, op: str, inputs: tuple, device: Backend | None, attrs: dict):
    """Run primitive ``op`` on ``inputs``; the result is an ``out_type`` tensor."""
    opdef = get_op(op)
    attrs = with_order(op, attrs)
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
    dev.run(op, [t.device_view for t in inputs], [out_view], attrs)
    out = out_type(buf, spec.shape, strides, 0, spec.dtype, dev)
    _record(op, tuple(inputs), attrs, out)
    return out


def apply_op(op: str, inputs: tuple, **attrs):
    """Run ``op`` on ``inputs`` (one at least); the result has the class of the first."""
    return run_primitive(type(inputs[0]), op, inputs, None, attrs)


def apply_view(op: str, x, geom_shape, geom_strides, offset, **attrs):
    """Make a view of ``x`` with new geometry, recorded like any op."""
    out = type(x)(x._buf, tuple(geom_shape), tuple(geom_strides), offset, x.dtype, x.device)
    (spec,) = get_op(op).infer([Spec(x.shape, x.dtype)], attrs)
    assert spec.shape == out.shape, (op, spec.shape, out.shape)
    _record(op, (x,), attrs, out)
    return out
