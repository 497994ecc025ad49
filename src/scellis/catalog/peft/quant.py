"""Quantised frozen base weights (catalog layer): QLoRA's storage under the adapters.

``quantize.quantize_base(model, "nf4")`` stores every *frozen* dense weight (a plain dense block's
or the base weight under a LoRA adapter) as packed codes and scales (``base.quant``:
int8 per output channel, or NF4 per block of 64), and the f32 weight is dropped. The
block's forward then runs the ``qmatmul`` primitive, which decodes the codes inside the
matmul kernel, so the dense weight never exists again; its backward gives the input
its gradient through the same kernel (x @ W), and the codes none: they stay frozen.

The codes and scales are frozen parameters, ``weight_codes`` (u32) and
``weight_scales`` (f32) in place of ``weight`` (under double quantisation the scales are
``weight_scale_codes`` (u32, int8 codes) and ``weight_scale_scales`` (f32), which the
qmatmul kernels decode as they read a block's scale): checkpoints keep them (a resume loads
them back exactly) and the memory planner counts their bytes. Mixed precision leaves the
scales in f32 (``full_precision``). Quantising runs on the weight's device (the
``quant_absmax`` and ``quant_codes`` primitives), so nothing is read back and a browser
tab quantises as a native host does; on the planner's recording device only the shapes
are made.
"""

from __future__ import annotations

from ...autograd import no_grad
from ...base.dtypes import f32, u32
from ...base.errors import ScellisError
from ...base.quant import DEFAULT_BLOCK, QuantSpec
from ...devices.null import NullBackend
from ...runtime.creation import zeros
from ..blocks.common import Block, dense
from ..blocks.heads import LMHead
from ..blocks.linear import Linear
from ..module import Module
from .select import put_param

QUANT_PARAMS = ("weight_codes", "weight_scales", "weight_scale_codes", "weight_scale_scales")
F32_PARAMS = ("weight_scales", "weight_scale_scales")  # kept f32 under mixed precision


def _encode(weight, spec: QuantSpec) -> dict:
    """The parameters that store ``weight`` as ``spec`` says, on the weight's device."""
    dev = weight.device
    if isinstance(dev, NullBackend):  # shapes only: nothing to read or compute
        out = {"weight_codes": zeros((spec.n_words,), u32, dev)}
        if spec.double_quant:
            inner = spec.scale_spec
            out["weight_scale_codes"] = zeros((inner.n_words,), u32, dev)
            out["weight_scale_scales"] = zeros((inner.n_scales,), f32, dev)
        else:
            out["weight_scales"] = zeros((spec.n_scales,), f32, dev)
        return out
    with no_grad():
        codes, scales = weight.detach().cast(f32).contiguous().quantized(**spec.attrs())
        if not spec.double_quant:
            return {"weight_codes": codes, "weight_scales": scales}
        inner = spec.scale_spec  # the block scales, zero-padded into rows, as int8
        rows = scales.pad([0], [inner.numel - spec.n_scales]).reshape(inner.rows, inner.cols)
        scale_codes, scale_scales = rows.quantized(**inner.attrs())
    return {"weight_codes": codes, "weight_scale_codes": scale_codes,
            "weight_scale_scales": scale_scales}  # fmt: skip


def quantized(weight, fmt: str, block: int = DEFAULT_BLOCK, double_quant: bool = False):
    """(spec, parameters by name) of a 2-d ``weight``, computed on its own device."""
    if weight.ndim != 2:
        raise ScellisError(f"only 2-d dense weights are quantised, got shape {weight.shape}")
    spec = QuantSpec(fmt, weight.shape[0], weight.shape[1], block, double_quant)
    return spec, _encode(weight, spec)


def store_quantized(
    mod: Module, fmt: str, block: int, double_quant: bool = False, encoded=None
) -> None:
    """Replace ``mod.weight`` by its codes and scales, frozen, and note the spec.
    ``encoded``: ``quantized``'s answer for this weight, computed earlier (while the
    model was built, before the f32 weight was let go)."""
    spec, params = encoded or quantized(mod.weight, fmt, block, double_quant)
    # the wrapped block kept outside the tree (an adapter's base) must let go of the f32
    # weight too, or its memory is never given back
    for owner in (mod, getattr(mod, "base", None)):
        if owner is not None and "weight" in owner._params:
            owner._params.pop("weight")
            object.__setattr__(owner, "weight", None)
    for name, t in params.items():
        t.requires_grad = False
        put_param(mod, name, t)
    object.__setattr__(mod, "quant", spec)
    object.__setattr__(mod, "full_precision", tuple(n for n in F32_PARAMS if n in params))


def block_scales(mod: Module):
    """The f32 scales of ``mod``'s codes: stored, or decoded from their int8 codes."""
    spec = mod.quant
    if not spec.double_quant:
        return mod.weight_scales
    inner = spec.scale_spec
    rows = mod.weight_scale_codes.dequantized(mod.weight_scale_scales, **inner.attrs())
    return rows.reshape(-1)[: spec.n_scales]


def frozen_dense(mod: Module, x):
    """``x @ W^T + b`` of a dense block whose W may be stored quantised."""
    spec = getattr(mod, "quant", None)
    if spec is None:
        return dense(x, mod.weight, mod.bias)
    lead = x.shape[:-1]
    # double-quantised scales go to the kernel as codes: decoded there, never stored
    scales = (
        (mod.weight_scale_codes, mod.weight_scale_scales)
        if spec.double_quant
        else mod.weight_scales
    )
    y = x.reshape(-1, x.shape[-1]).qmatmul(mod.weight_codes, scales, **spec.attrs())
    if mod.bias is not None:
        y = y + mod.bias
    return y.reshape(*lead, spec.rows)


@no_grad()
def dequantized_weight(mod: Module):
    """The f32 weight the codes stand for (for a merge or an export), on mod's device."""
    return mod.weight_codes.dequantized(block_scales(mod), **mod.quant.attrs())


class QuantLinear(Block):
    """A frozen dense block (a ``Linear``, or an LM head's own projection) whose weight
    is stored quantised (``weight_codes``, ``weight_scales``; ``bias`` as it was)."""

    kind = "peft/quant"
    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(
        self, base: Linear | LMHead, fmt: str, block: int, double_quant: bool = False,
        encoded=None,
    ):  # fmt: skip
        c = base.ctx
        super().__init__(base.config, c["device"], c["dtype"], c["gen"])
        object.__setattr__(self, "base", base)  # outside the tree; an export gets it back
        put_param(self, "weight", base.weight)
        if base.bias is not None:
            put_param(self, "bias", base.bias)
        else:
            object.__setattr__(self, "bias", None)
        store_quantized(self, fmt, block, double_quant, encoded)

    def forward(self, x):
        return frozen_dense(self, x)

    @no_grad()
    def unquantized(self) -> Linear | LMHead:
        """The block this one replaced, with the f32 weight the codes stand for (for an
        export, which writes plain blocks)."""
        w = dequantized_weight(self)
        w.requires_grad = False
        put_param(self.base, "weight", w)
        return self.base
