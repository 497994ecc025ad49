"""The ``onnx/op`` block (catalog layer): one ONNX node, run with tensor methods.

The record keeps the node as data: ``op`` (the ONNX operator), ``attrs`` (its
attributes), ``args`` (one entry per ONNX input, in order) and ``output`` (which of
the node's outputs this block gives; a Split of three is three blocks). An ``args``
entry is ``in`` (the next of the block's ``in:`` values), ``null`` (an input left
out), ``{param: NAME, shape: [...]}`` (a learned tensor, a parameter of this block, so
training updates it) or ``{dtype: f32|i64|bool, shape: [...], values: [...]}`` (a
constant; non-finite floats are the strings ``inf``, ``-inf``, ``nan``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....base.errors import ScellisError
from ....runtime.tensor import Tensor
from ...registry import field as cfield
from ...registry import register
from ..common import Block
from . import host as H
from .ops import OPS, as_tensor, uploaded

_FLOATS = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


def host_of(spec: dict) -> H.Host:
    """A constant's record form as a host array."""
    dtype = spec.get("dtype")
    if dtype not in ("f32", "i64", "bool"):
        raise ScellisError(f"a constant of dtype {dtype!r} (f32, i64 or bool)")
    vals = spec.get("values", [])
    if dtype == "f32":
        vals = [_FLOATS[v] if isinstance(v, str) else float(v) for v in vals]
    return H.make(dtype, spec.get("shape", []), vals)


def record_form(h: H.Host) -> dict:
    """A host array as record data (the inverse of ``host_of``)."""
    vals = list(h.values)
    if h.dtype == "f32":
        vals = [v if v == v and abs(v) != float("inf") else str(v) for v in vals]
    return {"dtype": h.dtype, "shape": list(h.shape), "values": vals}


@dataclass(frozen=True)
class OnnxOpConfig:
    """One ONNX operator over this block's inputs, constants and parameters."""

    op: str = cfield(doc="the ONNX operator", choices=tuple(sorted(OPS)))
    attrs: dict = cfield(default_factory=dict, doc="the node's attributes")
    args: list = cfield(default_factory=list, doc="each ONNX input: in | null | param | constant")
    output: int = cfield(0, doc="which of the node's outputs this block gives", min=0)


# the inputs of an op that are shapes, axes or bounds (host values at every call); every
# other input is data, and meets the op's tensors
_HOST_ARGS = {"Reshape": 1, "Expand": 1, "Slice": 1, "Split": 1, "Unsqueeze": 1, "Squeeze": 1,
              "Trilu": 1, "Range": 0, "ConstantOfShape": 0, "Shape": 0, "Size": 0}  # fmt: skip


class OnnxOp(Block):
    """Parameters are the ``args`` marked ``param``, drawn zero (an import loads them).

    A data constant that would be uploaded when it meets a tensor (anything but one
    repeated value or a 0, 1, 2... run, which are traced fills and ranges) is a buffer
    (``const<i>``), made once with the block: the tracer sees it beside the parameters,
    so the compiled forward, the memory plan and replayed steps hold it, and no call
    uploads host data while it runs.
    """

    def __init__(self, cfg: OnnxOpConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        self.attrs = {k: host_of(v) if isinstance(v, dict) else v for k, v in cfg.attrs.items()}
        self.consts = {}
        for i, a in enumerate(cfg.args):
            if isinstance(a, dict) and "param" in a:
                setattr(self, a["param"], self.constant(tuple(a.get("shape", [])), 0.0))
            elif isinstance(a, dict):
                self.consts[i] = host_of(a)
                if i < _HOST_ARGS.get(cfg.op, len(cfg.args)) and uploaded(self.consts[i]):
                    self.register_buffer(f"const{i}", as_tensor(self.ctx, self.consts[i]))
            elif a not in ("in", None):
                raise ScellisError(f"onnx/op {cfg.op}: argument {i} is {a!r}")

    def forward(self, *xs):
        xs, args = list(xs), []
        for i, a in enumerate(self.config.args):
            if a == "in":
                if not xs:
                    raise ScellisError(f"onnx/op {self.config.op}: fewer inputs than 'in' args")
                args.append(xs.pop(0))
            elif isinstance(a, dict) and "param" in a:
                args.append(getattr(self, a["param"]))
            else:
                args.append(self.consts.get(i))
        if any(isinstance(a, Tensor) for a in args):  # the device form of data constants
            args = [self._buffers.get(f"const{i}", a) for i, a in enumerate(args)]
        ctx = {"device": self.ctx["device"], "dtype": self.ctx["dtype"]}
        return OPS[self.config.op](ctx, args, self.attrs, self.config.output)


register("onnx/op", "block", OnnxOpConfig, OnnxOp, builtin=True)

__all__ = ["OnnxOp", "OnnxOpConfig", "host_of", "record_form"]
