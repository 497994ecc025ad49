"""A record's compiled inference forward (ir layer): trace, lower, fuse, then run.

``compile_forward`` traces the record's forward on the null device and lowers it for
a target; ``CompiledForward.run(model, *inputs)`` executes it on the model's device
with the model's parameters (matched by their dotted names) and the given inputs.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.peft import adapters_of
from ..train.determinism import resolve_tier
from .execute import run_graph
from .fusion import fuse
from .graph import OpGraph, op_graph
from .kernels import KernelGraph, lower
from .limits import Target, resolve, target_of_device
from .trace import trace


class CompiledForward:
    def __init__(self, graph: OpGraph, kernels: KernelGraph, input_names: list[str]):
        self.graph, self.kernels, self.input_names = graph, kernels, input_names

    @property
    def dispatches(self) -> int:
        return self.kernels.dispatches

    def run(self, model, *inputs):
        g = self.graph
        params = dict(model.named_parameters())
        consts = dict(model.named_buffers())
        feeds, bases = {}, {}
        for b, info in g.buffers.items():
            if info.role in ("param", "buffer"):
                p = (params if info.role == "param" else consts).get(info.name)
                if p is None:
                    raise ScellisError(f"the model has no parameter {info.name!r}")
                if p.numel != info.numel or not p.is_contiguous():
                    raise ScellisError(f"parameter {info.name!r} is not one contiguous span")
                # a trained parameter is a span of its optimizer's flat buffer
                feeds[b], bases[b] = p._buf, p.offset
            elif info.role == "input":
                x = inputs[self.input_names.index(info.name)]
                if x.numel != info.numel or not x.is_contiguous() or x.offset != 0:
                    x = x.contiguous()
                feeds[b] = x._buf
        outs = run_graph(self.kernels, model_device(model), feeds, bases)
        return outs[0] if len(outs) == 1 else tuple(outs)


def model_device(model):
    return next(iter(model.parameters())).device


def compile_forward(
    record: dict, target: Target, *, batch: int | None = None, fused: bool = True
) -> CompiledForward:
    tr = trace(
        record, mode="inference", batch=batch, supports_f16=target.has_f16, device=target.device
    )
    eager = [p for p, m in adapters_of(tr.keep[0]) if m.lowering == "eager"]
    if eager:
        raise ScellisError(
            f"prefix/prompt adapters ({', '.join(eager)}) run on the eager path; "
            "they are not compiled (run the model eagerly, or compile it without them)"
        )
    uploads = [e for e in tr.events if e[0] == "upload" and _phase_of(tr, e[1]) == "forward"]
    if uploads:
        raise ScellisError("this forward uploads host data while it runs; it cannot be compiled")
    g = op_graph(tr)
    # a device without binding limits (the reference) groups as the WebGPU spec would
    kg = lower(g, target if target.limits else resolve("webgpu-spec"))
    if fused:
        kg = fuse(kg)
    return CompiledForward(g, kg, list((record.get("inputs") or {}).keys()))


def _phase_of(tr, serial: int) -> str:
    a = tr.allocs().get(serial)
    return a[2] if a else ""


class FusedForward:
    """A model's inference forward as the ``fast`` tier runs it: compiled and fused once
    per batch size, on first use, then run with the model's live parameters (so a
    training run's validation passes see its current weights). Where the forward
    cannot be compiled (eager-only adapters, a host upload, an input another record
    does not declare), it runs eagerly and ``reason`` says why, once."""

    def __init__(self, record: dict, model):
        self.record, self.model = record, model
        self.compiled: dict[int, CompiledForward] = {}
        self.reason = ""

    def __call__(self, *inputs):
        if self.reason:
            return self.model(*inputs)
        batch = inputs[0].shape[0]
        fwd = self.compiled.get(batch)
        if fwd is None:
            try:
                fwd = compile_forward(self.record, target_of_device(model_device(self.model)),
                                      batch=batch)  # fmt: skip
            except ScellisError as e:
                self.reason = f"the fused forward does not apply: {e}"
                return self.model(*inputs)
            self.compiled[batch] = fwd
        return fwd.run(self.model, *inputs)


def forward_for(record: dict, model, tier: str | None = None) -> object:
    """What runs ``model``'s inference forward under ``tier`` (default: the record's
    ``determinism_tier``): the fused compiled forward on ``fast`` with f32 compute,
    else the model itself."""
    tier = resolve_tier(tier or record.get("determinism_tier"))
    policy = record.get("precision")
    policy = policy.get("policy") if isinstance(policy, dict) else policy
    if not tier.fused_forward or policy not in (None, "f32"):
        return model
    return FusedForward(record, model)
