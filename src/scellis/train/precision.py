"""The precision policy (train layer): f32, or mixed f16 with dynamic loss scaling.

``mixed_f16`` runs the model's forward and backward in f16: each step casts the
parameters to f16 working copies (one cast over the optimizer's flat parameter buffer,
each copy recorded as its master's ``cast`` so gradients flow back to the f32 master
weights the optimizer owns) and the float inputs to f16; the prediction is cast back to
f32 before the loss, and reductions accumulate in f32 inside the kernels. The masters'
gradients arrive in f16 and are widened to f32 together (``widen_gradients``), so the
loss scale, clipping and the optimizer each take them in one pass.
It needs ``shader-f16`` on WebGPU. Without it the run is refused, or it runs in f32
when the policy says ``fallback: f32``, and the precision record says which. On the
reference device f16 is emulated (each op computes in f32 and rounds to f16).

Dynamic loss scaling keeps its state on the device: the scale and the count of clean
steps are 0-d f32 tensors updated by device ops from the step's finite flag, so the
host learns the scale only at log points (it is in the log events).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..autograd import no_grad
from ..base.dtypes import f16, f32
from ..base.errors import ScellisError
from ..base.shapes import contiguous_strides
from ..runtime.creation import full, zeros
from ..runtime.dispatch import apply, apply_inplace
from ..runtime.tensor import Tensor

POLICIES = ("f32", "mixed_f16")

# How far a mixed_f16 run's logged losses may sit from the same run in f32 over its first
# few tens of steps, with no step skipped for overflow in either (a skipped step leaves
# the runs different updates): |mixed - f32| <= atol + rtol * |f32| per step. Storing
# weights, activations and gradients in f16 rounds each value to 11 bits, and the
# roundings reach the loss through every layer. Measured on lavapipe over 8 steps: the
# LSTM forecaster 5.4e-5, the char Transformer 2.5e-5 (relative, worst step); the bound
# leaves room for deeper models and longer sums (the d384 Transformer's K = 8192 weight
# gradients). bench/step_time.py prints the gap of each pair it times.
MIXED_F16_LOSS_TOLERANCE = {"rtol": 5e-3, "atol": 1e-4}
_KEYS = {
    "policy",
    "master_weights",
    "loss_scaling",
    "fallback",
    "init_scale",
    "growth_factor",
    "backoff_factor",
    "growth_interval",
}


@dataclass(frozen=True)
class Precision:
    policy: str  # what runs: f32 | mixed_f16
    requested: str  # what was asked for
    master_weights: str = "f32"
    loss_scaling: str = "none"  # dynamic | static | none
    init_scale: float = 1.0
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000
    fallback: str | None = None  # "f32" when the run fell back to f32
    note: str = ""

    @property
    def compute(self):
        return f16 if self.policy == "mixed_f16" else f32

    def record(self) -> dict:
        return asdict(self)


def _device_label(device) -> str:
    info = getattr(device, "info", None)
    name = getattr(info, "name", None)
    return f"{device.name} adapter {name!r}" if name else f"device {device.name!r}"


def resolve_precision(spec, device) -> Precision:
    """The precision record for ``spec`` (None, a policy name or a dict) on ``device``."""
    spec = {"policy": "f32"} if spec is None else spec
    spec = {"policy": spec} if isinstance(spec, str) else dict(spec)
    unknown = set(spec) - _KEYS
    if unknown:
        raise ScellisError(
            f"unknown precision field(s) {sorted(unknown)}; known: {', '.join(sorted(_KEYS))}"
        )
    policy = spec.get("policy", "f32")
    if policy not in POLICIES:
        raise ScellisError(f"precision policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    if spec.get("master_weights", "f32") != "f32":
        raise ScellisError("master_weights must be f32 (the optimizers keep f32 buffers)")
    fallback = spec.get("fallback")
    if fallback not in (None, "f32", "refuse"):
        raise ScellisError(f"precision fallback must be f32 or refuse, got {fallback!r}")
    scaling = spec.get("loss_scaling", "dynamic" if policy == "mixed_f16" else "none")
    static = isinstance(scaling, (int, float)) and not isinstance(scaling, bool)
    if not static and scaling not in ("dynamic", "none"):
        raise ScellisError(f"loss_scaling must be dynamic, none or a number, got {scaling!r}")
    init = float(scaling) if static else float(spec.get("init_scale", 2.0**16))
    if scaling == "none":
        init = 1.0
    kw = dict(
        master_weights="f32",
        loss_scaling="static" if static else scaling,
        init_scale=init,
        growth_factor=float(spec.get("growth_factor", 2.0)),
        backoff_factor=float(spec.get("backoff_factor", 0.5)),
        growth_interval=int(spec.get("growth_interval", 2000)),
    )
    if kw["init_scale"] <= 0 or kw["growth_factor"] < 1 or not 0 < kw["backoff_factor"] < 1:
        raise ScellisError(
            "loss scaling needs init_scale > 0, growth_factor >= 1 and 0 < backoff_factor < 1"
        )
    if policy == "f32":
        return Precision("f32", "f32", **kw)
    if not device.supports(f16):
        where = _device_label(device)
        if fallback != "f32":
            raise ScellisError(
                f"precision mixed_f16 needs f16 shaders, and the {where} has no 'shader-f16' "
                "feature; choose policy f32, or add fallback: f32 to run in f32 here"
            )
        note = (
            f"the {where} has no 'shader-f16': running in f32 without loss scaling, "
            "as fallback: f32 asks"
        )
        kw.update(loss_scaling="none", init_scale=1.0)
        return Precision("f32", "mixed_f16", fallback="f32", note=note, **kw)
    note = (
        "f16 emulated on the reference device: each op computes in f32 and rounds to f16"
        if device.name == "reference"
        else ""
    )
    return Precision("mixed_f16", "mixed_f16", note=note, **kw)


def losses_follow_f32(mixed, f32) -> list[str]:
    """The steps whose mixed_f16 loss leaves ``MIXED_F16_LOSS_TOLERANCE`` around the f32
    run's, one line each (empty when all agree); a step either run skipped (None) must be
    skipped by both."""
    tol, out = MIXED_F16_LOSS_TOLERANCE, []
    if len(mixed) != len(f32):
        return [f"{len(mixed)} mixed_f16 losses against {len(f32)} f32 ones"]
    for i, (m, f) in enumerate(zip(mixed, f32)):
        if m is None or f is None:
            if (m is None) != (f is None):
                out.append(f"step {i}: skipped in one run only (mixed {m}, f32 {f})")
            continue
        if not abs(m - f) <= tol["atol"] + tol["rtol"] * abs(f):
            out.append(f"step {i}: mixed_f16 loss {m:.6g} against f32 {f:.6g}")
    return out


@no_grad()
def widen_gradients(params) -> None:
    """Gradients that arrived in another float dtype than their parameter's (f16 for an
    f32 master, ``working_copies(..., grads_as_copies=True)``) widened to the
    parameter's by one ``flat_gather`` into a flat buffer (f16 read, f32 written: the
    cast folded into the copy), each ``.grad`` then a view of it, in parameter order.
    The optimizer finds them one flat range (no gather of its own), and the loss scale
    and clipping scale them in one ``mul``; a cast per parameter took a dispatch each
    (100-odd a step for the d384 Transformer)."""
    narrow = [p for p in params if p.grad is not None and p.grad.dtype != p.dtype]
    if len(narrow) < 2 or len({p.dtype for p in narrow}) != 1:
        for p in narrow:
            p.grad = p.grad.cast(p.dtype)
        return
    first = narrow[0]
    wide = zeros((sum(p.numel for p in narrow),), first.dtype, first.device)
    parts = tuple(p.grad if p.grad.is_contiguous() else apply("copy", (p.grad,)) for p in narrow)
    apply_inplace("flat_gather", parts, (wide,))
    at = 0
    for p in narrow:
        shape = tuple(p.shape)
        p.grad = Tensor(wide._buf, shape, contiguous_strides(shape), wide.offset + at,
                        wide.dtype, wide.device)  # fmt: skip
        at += p.numel


class LossScaler:
    """Device-side loss scale: ``scale`` and ``good`` (clean steps since the last change)
    are 0-d f32 tensors; ``update(ok)`` applies the rule without reading them back."""

    def __init__(self):
        self.prec: Precision | None = None
        self.scale: Tensor | None = None
        self.good: Tensor | None = None

    @property
    def dynamic(self) -> bool:
        return self.prec is not None and self.prec.loss_scaling == "dynamic"

    @property
    def active(self) -> bool:
        return self.prec is not None and self.prec.loss_scaling != "none"

    def configure(self, prec: Precision, device) -> None:
        """Set the policy; a dynamic scale restored by ``load_state_dict`` is kept."""
        self.prec = prec
        keep = self.dynamic and self.scale is not None and self.scale.device is device
        if not keep:
            self.scale = full((), prec.init_scale, f32, device)
            self.good = full((), 0.0, f32, device)

    def update(self, ok: Tensor) -> None:
        """x growth_factor after growth_interval clean steps; x backoff_factor on overflow."""
        if not self.dynamic:
            return
        p = self.prec
        okf = ok.cast(f32)
        good = (self.good + 1.0) * okf
        grow = (good >= float(p.growth_interval)).cast(f32)
        factor = (grow * (p.growth_factor - 1.0) + 1.0) * okf + (1.0 - okf) * p.backoff_factor
        self.scale = self.scale * factor
        self.good = good * (1.0 - grow)

    def state_dict(self, snapshot: bool = True) -> dict:
        if self.scale is None:
            return {"scale": None, "good": None}
        if not snapshot:
            return {"scale": self.scale, "good": self.good}
        return {"scale": apply("copy", (self.scale,)), "good": apply("copy", (self.good,))}

    def load_state_dict(self, sd: dict, device) -> None:
        if sd.get("scale") is None:
            self.scale = self.good = None
            return
        self.scale, self.good = (_scalar(sd[k], device) for k in ("scale", "good"))


def _scalar(v, device) -> Tensor:
    if isinstance(v, Tensor) and v.device is device:
        return apply("copy", (v.reshape(()).cast(f32),))
    if isinstance(v, Tensor):
        raise ScellisError("a saved loss scale lives on another device; pass its value")
    return full((), float(v), f32, device)
