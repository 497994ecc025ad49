"""Applying one primitive (runtime layer): run it on a device and record it on the tape.

Generic over the tensor class: outputs are made with the class the caller names (the
class of the inputs, for Tensor's own methods), so this module sits below ``tensor``
and the method mixins can call it. ``dispatch.apply`` binds it to ``Tensor``.
Shapes and dtypes come from the op table; outputs are allocated here, contiguous;
the device only runs. View ops never reach a device.
"""

from __future__ import annotations

from ..autograd.mode import is_grad_enabled, no_grad
from ..autograd.rules import SAVES_OUTPUT, reads
from ..autograd.tape import Node
from ..base.errors import DeviceError, DTypeError
from ..base.shapes import contiguous_strides, numel
from ..devices.base import Backend, View, get_device
from ..devices.kernel_choice import REORDERABLE, with_order
from ..ops.table import OPS, Spec, get_op

_default = {"device": "reference"}


def set_default_device(name: str) -> None:
    """Device for tensors created without ``device=`` (``reference``, ``webgpu``, ``null``)."""
    get_device(name)  # fail now, with the reason, rather than at first use
    _default["device"] = name


def default_device() -> Backend:
    return get_device(_default["device"])


# op -> the input indices that can carry a gradient (None: every input), made once per op
_DIFF: dict[str, frozenset | None] = {}


def _diff_inputs(op: str, opdef) -> frozenset | None:
    diff = _DIFF.get(op, False)
    if diff is False:
        diff = None if opdef.diff_inputs == (-1,) else frozenset(opdef.diff_inputs)
        _DIFF[op] = diff
    return diff


def _record(op: str, inputs: tuple, attrs: dict, out, opdef=None) -> None:
    for t in inputs:  # most ops of a step have no input that needs a gradient: ask first
        if t is not None and t.requires_grad:
            break
    else:
        return
    opdef = opdef or get_op(op)
    if not opdef.diff_inputs or not is_grad_enabled():
        return
    diff = _diff_inputs(op, opdef)
    if diff is None:
        needs = tuple([t is not None and t.requires_grad for t in inputs])
    else:
        needs = tuple(
            [i in diff and t is not None and t.requires_grad for i, t in enumerate(inputs)]
        )
    if True not in needs:
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


# (op, input shapes and dtypes, attrs) -> (output Spec, its contiguous strides, its numel):
# an op's shape rule is a pure function of these, and running it was a fair part of each
# eager op's host time. Attrs that cannot be hashed (lists) skip the cache.
_INFERRED: dict = {}
_INFERRED_MAX = 8192


def _geometry_key(op: str, inputs: tuple, attrs: dict) -> tuple:
    """The cache key of an op's output geometry. One and two inputs are spelt out: a
    comprehension costs more than the rest of the key, and they are nearly every op.
    Dtypes by name: a DType's own hash is Python code, a str's is cached. The three
    forms differ in length or first item, so no two collide."""
    n = len(inputs)
    if n == 2:
        a, b = inputs
        key = (op, a.shape, a.dtype.name, b.shape, b.dtype.name)
    elif n == 1:
        a = inputs[0]
        key = (op, a.shape, a.dtype.name)
    else:
        key = (op, tuple([(t.shape, t.dtype.name) for t in inputs]))
    return (key, tuple(attrs.items())) if attrs else key


def _out_geometry(opdef, op: str, inputs: tuple, attrs: dict) -> tuple:
    key = _geometry_key(op, inputs, attrs)
    try:
        hit = _INFERRED.get(key)
    except TypeError:  # an unhashable attr
        key, hit = None, None
    if hit is None:
        (spec,) = opdef.infer([Spec(t.shape, t.dtype) for t in inputs], attrs)
        hit = (spec, contiguous_strides(spec.shape), numel(spec.shape))
        if key is not None:
            if len(_INFERRED) >= _INFERRED_MAX:
                _INFERRED.clear()
            _INFERRED[key] = hit
    return hit


# (device, dtype name) -> whether the device holds that dtype
_SUPPORTS: dict = {}


def _supports(dev: Backend, dtype) -> bool:
    key = (dev, dtype.name)
    ok = _SUPPORTS.get(key)
    if ok is None:
        ok = _SUPPORTS[key] = bool(dev.supports(dtype))
    return ok


def _views(inputs: tuple) -> list:
    """The device's views of ``inputs`` (two spelt out: the common case, and a
    comprehension costs about as much as one more view)."""
    if len(inputs) == 2:
        a, b = inputs
        return [View(a._buf, a.shape, a.strides, a.offset, a.dtype),
                View(b._buf, b.shape, b.strides, b.offset, b.dtype)]  # fmt: skip
    return [View(t._buf, t.shape, t.strides, t.offset, t.dtype) for t in inputs]


def run_primitive(out_type: type, op: str, inputs: tuple, device: Backend | None, attrs: dict):
    """Run primitive ``op`` on ``inputs``; the result is an ``out_type`` tensor."""
    opdef = OPS.get(op) or get_op(op)  # get_op says what is wrong with an unknown name
    if op in REORDERABLE:
        attrs = with_order(op, attrs)
    spec, strides, n = _out_geometry(opdef, op, inputs, attrs)
    shape, dtype = spec.shape, spec.dtype
    if device is not None:
        dev = device
    elif inputs:
        dev = inputs[0].device
        for t in inputs:
            if t.device is not dev:
                _device_of(inputs)  # says which devices differ
    else:
        dev = default_device()
    if not _SUPPORTS.get((dev, dtype.name)) and not _supports(dev, dtype):
        raise DTypeError(f"device {dev.name!r} does not support {dtype}")
    for t in inputs:
        if t.dtype is not dtype and not _supports(dev, t.dtype):
            raise DTypeError(f"device {dev.name!r} does not support {t.dtype}")
    if opdef.is_view:
        raise DeviceError(f"{op} is a view op; use Tensor.{op}")
    run_new = getattr(dev, "run_new", None)  # a backend's shorter path (the reference's)
    buf = None if run_new is None else run_new(op, inputs, attrs, shape, n, dtype)
    if buf is None:
        buf = dev.alloc(n, dtype)
        out_view = View(buf, shape, strides, 0, dtype)
        dev.run(op, _views(inputs), [out_view], attrs)
    out = out_type(buf, shape, strides, 0, dtype, dev)
    _record(op, tuple(inputs), attrs, out, opdef)
    return out


def apply_op(op: str, inputs: tuple, **attrs):
    """Run ``op`` on ``inputs`` (one at least); the result has the class of the first."""
    return run_primitive(type(inputs[0]), op, inputs, None, attrs)


def apply_view(op: str, x, geom_shape, geom_strides, offset, **attrs):
    """Make a view of ``x`` with new geometry, recorded like any op."""
    out = type(x)(x._buf, tuple(geom_shape), tuple(geom_strides), offset, x.dtype, x.device)
    opdef = get_op(op)
    spec = _out_geometry(opdef, op, (x,), attrs)[0]
    assert spec.shape == out.shape, (op, spec.shape, out.shape)
    _record(op, (x,), attrs, out, opdef)
    return out


def unrecorded_view(x, shape: tuple, strides: tuple, offset: int):
    """A view of ``x`` that the tape never sees, for code that runs where nothing is
    recorded (``apply_with_vjp``'s forward, backward's rules): a recorded view's op
    lookup and shape check are most of its cost."""
    return type(x)(x._buf, shape, strides, offset, x.dtype, x.device)


def apply_with_vjp(
    name: str, inputs: tuple, forward, rule, attrs: dict, reads=None, saves: bool = False
):
    """``forward(*inputs, **attrs)`` as one node on the tape whose VJP is ``rule(node,
    g)`` (``node.saved["out"]`` the result, ``node.attrs`` the attrs): the forward's own
    ops record nothing, so backward runs the rule's few ops instead of a VJP for each of
    them. ``reads[i]``: whether the rule reads input i's value (None: none is read, and
    the node keeps the result instead; a change in place to it is refused in
    backward, as for any saved result). ``saves``: the forward returns ``(out,
    extras)``, intermediates of its own (no caller holds them, so none changes in
    place) that the node keeps in ``saved`` for the rule."""
    needs = tuple([t is not None and t.requires_grad for t in inputs])
    if True not in needs or not is_grad_enabled():
        out = forward(*inputs, **attrs)
        return out[0] if saves else out
    with no_grad():
        out = forward(*inputs, **attrs)
    extras = None
    if saves:
        out, extras = out
    if out.dtype.is_float:
        keep = (False,) * len(inputs) if reads is None else reads
        node = Node(name, inputs, attrs, needs, out.shape, out.dtype, keep)
        node.rule = rule
        if extras:
            node.saved.update(extras)
        if reads is None:
            node.saved["out"] = out.detach()
            node.out_version = out._version
        out._node = node
        out.requires_grad = True
    return out
