"""LoRA and DoRA (catalog layer): low-rank adapters on dense blocks, and their merge.

LoRA (Hu et al. 2021) adds ``s * B A`` to a frozen weight W [out, in], with A [r, in],
B [out, r] and s = alpha / r: ``y = x W^T + b + s * drop(x) A^T B^T``. DoRA (Liu et al.
2024) splits the adapted weight into a direction and a learned magnitude m [out]:
``V = W + s B A``, ``y = (x W^T + s drop(x) A^T B^T) * m / ||V||_row + b`` (with no
dropout that is ``x (m / ||V||_row * V)^T + b``). The row norm is differentiated too
(the paper's cheaper variant detaches it; this one keeps the exact gradient).

The adapted module keeps the dense block's ``weight`` and ``bias`` under their own
names (frozen), so the base model's parameter paths and import name maps still hold;
the adapter adds ``lora_A``, ``lora_B`` (and ``magnitude``). A starts as torch's
Linear draw (U(+-1/sqrt(in))), B at zero, m at ||W||_row: the adapted model starts
equal to the base one. Both are plain compositions of matmul and elementwise ops, so
they trace into the op graph like any block (``lowering = "graph"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...autograd import no_grad
from ...base.errors import ScellisError
from ...runtime.functional import dropout
from ..blocks.common import Block, dense
from ..blocks.linear import Linear
from ..module import Module
from ..registry import field
from .quant import QuantLinear, dequantized_weight, frozen_dense
from .select import put_param, replace_child, select


@dataclass(frozen=True)
class LoRAConfig:
    """Low-rank adapters on dense blocks: y = x W^T + b + (alpha / rank) drop(x) A^T B^T."""

    target_modules: tuple | str = field(
        doc="name patterns of the dense blocks to adapt, e.g. ['*.attn.q', '*.attn.v'] or [q, v]"
    )
    rank: int = field(8, doc="the rank r of B A", min=1)
    alpha: float = field(
        16.0, doc="scale: the update is alpha / rank * B A", min=0.0, exclusive_min=True
    )
    dropout: float = field(0.0, doc="dropout on the adapter's input, in training", min=0, max=1)


@dataclass(frozen=True)
class DoRAConfig(LoRAConfig):
    """Weight-decomposed LoRA: a LoRA direction, rescaled per output row by a learned
    magnitude (y = (x W^T + s drop(x) A^T B^T) * m / ||W + s B A||_row + b)."""


class LoRALinear(Block):
    """A dense block with a LoRA adapter; ``merge()`` gives back the plain block."""

    kind = "peft/lora"
    lowering = "graph"
    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: LoRAConfig, base: Linear, *, gen=None):
        c = base.ctx
        super().__init__(cfg, c["device"], c["dtype"], gen)
        object.__setattr__(self, "base", base)  # outside the tree: its tensors are ours
        out_f, in_f = base.weight.shape
        put_param(self, "weight", base.weight)
        if base.bias is not None:
            put_param(self, "bias", base.bias)
        else:
            object.__setattr__(self, "bias", None)
        self.lora_A = self.uniform((cfg.rank, in_f), 1.0 / math.sqrt(in_f))
        self.lora_B = self.constant((out_f, cfg.rank), 0.0)
        object.__setattr__(self, "scale", cfg.alpha / cfg.rank)

    def delta(self, x):
        h = dropout(x, self.config.dropout, self.training)
        return dense(dense(h, self.lora_A) * self.scale, self.lora_B)

    def forward(self, x):
        return frozen_dense(self, x) + self.delta(x)

    def base_weight(self):
        """W, decoded from its codes when the base is stored quantised."""
        return self.weight if getattr(self, "quant", None) is None else dequantized_weight(self)

    def merged_weight(self):
        """W + s B A: the dense weight that computes the adapted map (without dropout)."""
        return self.base_weight() + (self.lora_B @ self.lora_A) * self.scale

    @no_grad()
    def merge(self) -> Linear:
        """The base dense block carrying the merged weight (frozen as W was)."""
        w = self.merged_weight().contiguous()
        w.requires_grad = getattr(self.weight, "requires_grad", False)
        put_param(self.base, "weight", w)
        if self.bias is not None:
            put_param(self.base, "bias", self.bias)
        return self.base

    def describe(self) -> str:
        c = self.config
        return f"rank={c.rank} alpha={c.alpha:g} dropout={c.dropout:g}"


class DoRALinear(LoRALinear):
    """A dense block with a DoRA adapter: LoRA's A and B plus ``magnitude`` [out]."""

    kind = "peft/dora"

    def __init__(self, cfg: DoRAConfig, base: Linear, *, gen=None):
        super().__init__(cfg, base, gen=gen)
        with no_grad():
            m = self._row_norm(self.weight.detach())
        self.magnitude = m.contiguous().requires_grad_()

    @staticmethod
    def _row_norm(w):
        return (w * w).sum(1).sqrt()

    def _coef(self):
        v = self.weight + (self.lora_B @ self.lora_A) * self.scale
        return v, self.magnitude / self._row_norm(v)

    def forward(self, x):
        _, coef = self._coef()
        y = (dense(x, self.weight) + self.delta(x)) * coef
        return y if self.bias is None else y + self.bias

    def merged_weight(self):
        v, coef = self._coef()
        return v * coef.unsqueeze(-1)


KINDS = {"lora": (LoRAConfig, LoRALinear), "dora": (DoRAConfig, DoRALinear)}


def dense_blocks(model: Module) -> dict[str, Linear]:
    """Every plain dense block by path (attention projections and MLP layers included)."""
    return {p: m for p, m in model.named_modules() if isinstance(m, Linear)}


def apply_lora(model: Module, cfg: LoRAConfig, gen=None) -> list[str]:
    """Wrap each dense block that ``cfg.target_modules`` names; their paths.

    Only the base weights of the wrapped blocks are frozen here; freezing the rest of
    the model is the caller's (``apply_finetune`` freezes everything old by default).
    """
    wrap = LoRALinear
    for _, (config, impl) in KINDS.items():
        if type(cfg) is config:
            wrap = impl
    if isinstance(cfg.target_modules, str):
        patterns = (cfg.target_modules,)
    else:
        patterns = tuple(cfg.target_modules)
    blocks = dense_blocks(model)
    paths = select(blocks, patterns, "dense block (nn/linear, attention or MLP projection)")
    for path in paths:
        base = blocks[path]
        for t in (base.weight, base.bias):
            if t is not None:
                t.requires_grad = False
        new = wrap(cfg, base, gen=gen)
        new.train(base.training)
        replace_child(model, path, new)
    return paths


def lora_modules(model: Module) -> dict[str, LoRALinear]:
    return {p: m for p, m in model.named_modules() if isinstance(m, LoRALinear)}


def merge_lora(model: Module) -> list[str]:
    """Fold every LoRA-family adapter into its dense block (for export); their paths.
    Frozen blocks stored quantised (a head, a block no adapter targeted) get their
    decoded f32 weight back, so what comes out is a plain model."""
    found = lora_modules(model)
    if not found:
        raise ScellisError("the model has no LoRA or DoRA adapter to merge")
    for path, m in found.items():
        replace_child(model, path, m.merge())
    for path, m in list(model.named_modules()):
        if isinstance(m, QuantLinear):
            replace_child(model, path, m.unquantized())
    return list(found)
