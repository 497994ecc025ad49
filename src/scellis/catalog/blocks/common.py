"""Shared pieces of the built-in blocks (catalog layer): the block base and its initialisers.

Every parameter is drawn from a Philox stream (``gen``, by default the eager ``init``
stream), in construction order, so a model's initial weights follow from its seed on
every device. The distributions are torch's defaults, block by block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from contextvars import ContextVar

from ...autograd import no_grad
from ...autograd.rules_dense import split_activation_vjp
from ...base.dtypes import DType, as_dtype, f32
from ...base.rng import Generator
from ...devices.base import get_device
from ...devices.kernel_choice import current as kernel_choice
from ...devices.kernel_choice import software_device
from ...ops.dense import ACTIVATION_GRAD_OPS
from ...runtime.creation import full, generator, rand, randn
from ...runtime.dispatch import default_device
from ...runtime.primitive import apply_with_vjp
from ...runtime.tensor import Tensor
from ..module import Module
from ..registry import check_config

# the most negative finite f32: masked scores exp to 0, and a fully masked row stays
# finite (uniform weights) where -inf would make NaN
MASKED = -3.4028234663852886e38


class Block(Module):
    """A built-in block: its Config, and where (device, dtype, stream) it draws parameters."""

    def __init__(self, cfg, device=None, dtype=None, gen: Generator | None = None):
        super().__init__()
        check_config(cfg)
        self.config = cfg
        dev = get_device(device) if device is not None else default_device()
        ctx = {"device": dev, "dtype": as_dtype(dtype, f32), "gen": gen or generator("init")}
        object.__setattr__(self, "ctx", ctx)

    def __getattr__(self, name: str):
        # torch keeps a layer's constructor arguments as attributes
        # (``linear.in_features``, ``lstm.hidden_size``, ``dropout.p``); a block keeps
        # them in its Config, under torch's names. Only reached when the instance has
        # no such attribute of its own.
        cfg = self.__dict__.get("config")
        if cfg is not None and not name.startswith("_") and name in _field_names(cfg):
            return getattr(cfg, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def dtype(self) -> DType:
        return self.ctx["dtype"]

    def uniform(self, shape, bound: float) -> Tensor:
        """U(-bound, bound) parameter of ``shape``."""
        dtype = self.ctx["dtype"]
        # the draws are let go as soon as they are scaled: two tensors of ``shape`` are
        # alive at once, not three (a large layer's construction peak)
        return self._param(lambda dev, gen: rand(shape, dev, dtype, gen) * (2.0 * bound) - bound)

    def normal(self, shape, std: float = 1.0) -> Tensor:
        dtype = self.ctx["dtype"]

        def make(dev, gen):
            t = randn(shape, dev, dtype, gen)
            return t * std if std != 1.0 else t

        return self._param(make)

    def constant(self, shape, value: float) -> Tensor:
        dtype = self.ctx["dtype"]
        return self._param(lambda dev, gen: full(shape, value, dtype, dev))

    def _param(self, make) -> Tensor:
        """A parameter from ``make(device, stream)``: on this block's device, or, while
        ``deferred_params`` is on, shape-only on the null device (the stream advances as
        if drawn), with a way to make the real one later from the same draws."""
        c = self.ctx
        later = _DEFERRED.get()
        start = dataclasses.replace(c["gen"]) if later is not None else None
        with no_grad():
            t = make(c["device"] if later is None else get_device("null"), c["gen"])
        t.requires_grad_()
        if later is not None:
            later[id(t)] = (t, lambda: _made(make, c["device"], dataclasses.replace(start)))
        return t

    def dense_params(self, fan_in: int, fan_out: int, bias: bool) -> None:
        """``weight`` [fan_out, fan_in] and ``bias`` as torch.nn.Linear draws them."""
        bound = 1.0 / math.sqrt(fan_in)
        self.weight = self.uniform((fan_out, fan_in), bound)
        self.bias = self.uniform((fan_out,), bound) if bias else None


_DEFERRED: ContextVar[dict | None] = ContextVar("deferred_params", default=None)


@contextlib.contextmanager
def deferred_params():
    """While on, blocks make their drawn parameters shape-only (nothing on a device) and
    note in the yielded {id(tensor): (tensor, make)} how to make each for real:
    ``make()`` draws the same values as an eager construction would have, on the block's
    device. A loader that replaces most of them with pre-trained values, or quantises
    them, then never holds the whole model's freshly drawn weights at once."""
    made: dict = {}
    token = _DEFERRED.set(made)
    try:
        yield made
    finally:
        _DEFERRED.reset(token)


def _made(make, device, gen) -> Tensor:
    with no_grad():
        return make(device, gen)


def _field_names(cfg) -> frozenset[str]:
    return (
        frozenset(f.name for f in dataclasses.fields(cfg))
        if dataclasses.is_dataclass(cfg)
        else frozenset()
    )


def dense(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` over the last axis (torch's F.linear) as one 2-d matmul.

    On the tape it is one node: its VJP is the two matmuls and the bias's column sum
    that the forward's ops' own VJPs come to, without the nodes of its reshapes,
    transposed view and broadcast (a Linear layer's backward was six nodes, most of a
    small layer's host time)."""
    if fuses_dense(x, weight, bias):  # the bias added in the matmul's store
        return _fused_dense(x, weight, bias, "none")
    inputs = (x, weight) if bias is None else (x, weight, bias)
    return apply_with_vjp("dense", inputs, _dense, _dense_vjp, {}, _dense_reads(inputs))


def fuses_dense(x: Tensor, weight: Tensor, bias: Tensor | None) -> bool:
    """Whether the layer runs as the fused ``dense_act`` primitive: the step's kernel
    choice fuses dense layers (the ``fast`` tier) and the layer is f32 with a bias."""
    if bias is None or not kernel_choice().fuses("dense"):
        return False
    return x.dtype == weight.dtype == bias.dtype == f32


def _fused_dense(x: Tensor, weight: Tensor, bias: Tensor, act: str) -> Tensor:
    split = not _fused_backward_pays(x.device)
    flat = x.reshape(-1, x.shape[-1])
    if split and act in ACTIVATION_GRAD_OPS:
        y = _split_dense(flat, weight, bias, act)
    else:
        packed = flat.prim("dense_act", weight, bias, act=act, split_backward=split)
        # one slot (no activation): a reshape, whose cotangent is a view, where taking
        # slot 0 would cost the backward a copy of the cotangent into the packed shape
        y = packed.reshape(packed.shape[1:]) if act == "none" else packed[0]
    return y.reshape(*x.shape[:-1], weight.shape[0])


def _split_dense(x: Tensor, weight: Tensor, bias: Tensor, act: str) -> Tensor:
    """The fused layer as one node whose result is the activation alone (the split
    backward's form): its VJP takes that result's cotangent as it is and the saved
    pre-activation (``autograd.rules_dense.split_activation_vjp``)."""
    reads = (weight.requires_grad, x.requires_grad, False)
    return apply_with_vjp(
        "dense_act", (x, weight, bias), _split_forward, split_activation_vjp, {"act": act},
        reads, saves=True,
    )  # fmt: skip


def _split_forward(x: Tensor, weight: Tensor, bias: Tensor, act: str):
    packed = x.prim("dense_act", weight, bias, act=act, split_backward=True)
    return packed[0], {"pre": packed[1]}


def _dense(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    lead = x.shape[:-1]
    y = x.reshape(-1, x.shape[-1]) @ weight.mT
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, weight.shape[0])


def _dense_reads(inputs: tuple) -> tuple:
    # the input's gradient reads the weight, the weight's reads the input
    return (inputs[1].requires_grad, inputs[0].requires_grad) + (False,) * (len(inputs) - 2)


def _dense_vjp(node, g):
    x, weight = node.inputs[0], node.inputs[1]
    needs = node.needs
    g2 = g.reshape(-1, g.shape[-1])
    gx = (g2 @ weight.detach()).reshape(x.shape) if needs[0] else None
    gw = g2.mT @ x.detach().reshape(-1, x.shape[-1]) if needs[1] else None
    gb = g2.sum(0) if len(needs) > 2 and needs[2] else None
    return gx, gw, gb


ACTIVATIONS = {
    "gelu": lambda x: x.gelu_erf(),
    "gelu_tanh": lambda x: x.gelu_tanh(),
    "relu": lambda x: x.relu(),
    "silu": lambda x: x.silu(),
    "tanh": lambda x: x.tanh(),
}


def _fused_backward_pays(device) -> bool:
    """Whether the fused dense layer's one-launch backward pays on ``device``: on the
    reference device and CPU-emulated adapters it saves launches; on a real GPU it
    reduces each column's rows on a few lanes, which keeps the chip far less busy than
    the unfused activation gradient and column sum (an H100 ran the char Transformer's
    fast step 1.7x slower than prod's with one lane per column, and still 1.2x slower
    with 16, bench/RESULTS.md). There the layer keeps its one-kernel forward and takes
    the split backward."""
    return software_device(device)


def dense_act(x: Tensor, weight: Tensor, bias: Tensor | None, activation: str) -> Tensor:
    """``ACTIVATIONS[activation](dense(x, weight, bias))``. Where the step's kernel
    choice fuses training kernels (the ``fast`` tier) and the layer is f32 with a bias,
    it is the fused ``dense_act`` primitive (ops/dense.py): one kernel forward (matmul,
    bias and activation) that keeps the pre-activation, and a fused backward where
    that pays (``_fused_backward_pays``)."""
    if not fuses_dense(x, weight, bias):
        return ACTIVATIONS[activation](dense(x, weight, bias))
    return _fused_dense(x, weight, bias, activation)
