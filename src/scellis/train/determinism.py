"""Determinism tiers (train layer): what a run promises about repeating itself.

Every run names its tier; a missing or unknown tier is refused, never defaulted.

* ``debug``: two runs on one device with the same inputs give bitwise identical
  losses and weights. Every built-in kernel has a fixed reduction order and no float
  atomics (see the WebGPU reduce, matmul and index kernels), and every random draw is
  a Philox function of (seed, stream, step, draw).
* ``prod``: a run agrees with the reference device within a tolerance declared per op
  family (``PROD_TOLERANCE``); the record's families are those of its blocks, and the
  loosest of them bounds the run (``tolerance_for``). ``within`` is the one check,
  used by the tier tests (tests/train/test_prod_tolerance.py) and by
  ``bench/conformance.py``.
* ``fast``: prod's reordered kernels plus fused training kernels: a dense layer's
  matmul, bias and activation in one kernel that keeps the pre-activation, with a
  fused backward where that pays (``catalog.blocks.common.dense_act``), a conv's taps
  unfolded in one launch and the conv run as that dense layer (``ops.unfold``,
  ``catalog.blocks.conv``), one optimizer dispatch reading every gradient where it
  lies (no gather into a flat buffer first; where that pays,
  ``devices.kernel_choice.SOFTWARE_ONLY``), the optimizer
  phase's overflow guard, gradient clipping and the loop's tally fused
  (``ops.fused_step``, one gradient-statistics op the update reads), the
  mean cross-entropy as one primitive (``ops.xent``), a small LSTM layer's every step
  in one launch each way (``webgpu/kernels/recurrent_seq.py``), inverted dropout's
  mask applied in one pass each way (``masked_scale``): fewer launches per step, which
  is what a replayed step's time is on a real GPU; and the adapter's own exp and log
  in every training kernel (``KernelChoice.native_math``): within prod's tolerance of
  the reference. Every
  inference forward of the run (validation passes) and of a trained run (evaluate,
  predict, forecast, generate) is the compiled forward with fused elementwise chains
  and matmul epilogues (``ir.compiled``); fused values stay in f32 registers, so they
  may differ from an unfused forward in the last bits, within
  ``FAST_FORWARD_TOLERANCE``.

Which kernels a tier's training step uses is decided here, once: ``KERNELS`` maps a
tier to its ``devices.kernel_choice.KernelChoice`` (reordered sums, fused training
kernels, subgroup reductions), which the train loop sets around each step and, for
its reduction variants alone, around each validation pass. ``prod``'s reordered
kernel is the split-K matmul of a tall-K product (a weight gradient summed over many
tokens): its K is cut into parts summed one after the other, where ``debug`` sums
every k in one fixed sequence.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..base.errors import ScellisError
from ..devices.kernel_choice import FIXED, FUSIONS, KernelChoice

TIERS = ("debug", "prod", "fast")

# |a - b| <= atol + rtol * max|b| per tensor (b = reference), on the logged losses and on
# every weight, for training over a few tens of steps (the error grows with steps: long
# runs drift apart, as any two float orders do). Measured on lavapipe against the
# reference device, 8-12 steps, worst weight gap at the model's largest weight
# (bench/RESULTS.md, "Determinism tiers"): TCN (dense) 2.1e-5, LSTM 1.3e-5, char
# Transformer 6.1e-5; losses 1e-7 to 2e-7. The bounds leave 5-15x headroom for other
# adapters' reassociation (fma contraction, exp/tanh approximations).
PROD_TOLERANCE = {
    "f32": {
        "dense": {"rtol": 1e-4, "atol": 1e-6},
        "norm": {"rtol": 1e-4, "atol": 1e-6},
        "recurrent": {"rtol": 2e-4, "atol": 1e-5},
        "attention": {"rtol": 5e-4, "atol": 1e-5},
    },
    "mixed_f16": {
        "dense": {"rtol": 2e-2, "atol": 1e-3},
        "norm": {"rtol": 2e-2, "atol": 1e-3},
        "recurrent": {"rtol": 3e-2, "atol": 2e-3},
        "attention": {"rtol": 3e-2, "atol": 2e-3},
    },
}

# the training kernels each tier may use (devices.kernel_choice)
KERNELS = {
    "debug": FIXED,
    "prod": KernelChoice(reordered=True, subgroups=True),
    "fast": KernelChoice(reordered=True, fusions=FUSIONS, subgroups=True, native_math=True),
}

# the fused inference forward against the eager one, relative to the largest output
FAST_FORWARD_TOLERANCE = {"rtol": 1e-5}

# which family a catalog block belongs to, by the words of its block_id
_FAMILY_WORDS = (
    ("recurrent", ("lstm", "gru", "rnn", "recurrent")),
    ("attention", ("transformer", "attention", "mha")),
    ("norm", ("norm",)),
)


def family_of(block_id: str) -> str:
    """The op family of a block: recurrent, attention, norm or dense."""
    name = block_id.lower()
    for family, words in _FAMILY_WORDS:
        if any(w in name for w in words):
            return family
    return "dense"


def policy_of(precision) -> str:
    spec = precision.get("policy") if isinstance(precision, dict) else precision
    return "mixed_f16" if spec == "mixed_f16" else "f32"


def tolerance_for(record: dict) -> dict:
    """The prod bound of ``record``: the loosest family among its blocks, for its
    precision policy; also names the family (``{"family", "rtol", "atol"}``)."""
    table = PROD_TOLERANCE[policy_of(record.get("precision"))]
    families = {family_of(str(b.get("block_id", ""))) for b in record["blocks"].values()}
    worst = max(families or {"dense"}, key=lambda f: (table[f]["rtol"], table[f]["atol"]))
    return {"family": worst, **table[worst]}


def gap(got, want) -> tuple[float, float]:
    """(largest |got - want|, largest |want|) over two equal-length flat sequences."""
    if len(got) != len(want):
        raise ScellisError(f"cannot compare {len(got)} values with {len(want)}")
    worst = max((abs(a - b) for a, b in zip(got, want)), default=0.0)
    if any(math.isnan(a) != math.isnan(b) for a, b in zip(got, want)):
        worst = math.inf
    return worst, max((abs(b) for b in want), default=0.0)


def within(got: dict, want: dict, tol: dict, *, shared_scale: bool = False) -> list[str]:
    """The named flat sequences of ``got`` that leave ``tol`` around ``want``'s (the
    reference), each as one line; empty when all agree. Each sequence is measured at
    its own largest value, or, ``shared_scale``, at the largest of all of them: the
    weights are, since a weight whose gradient is zero in exact arithmetic (an
    attention key's bias: softmax ignores a shift shared by every key) moves only on
    rounding noise, which Adam scales to full-size steps on either device."""
    scale = max((abs(v) for ref in want.values() for v in ref), default=0.0)
    out = []
    for name, ref in want.items():
        if name not in got:
            out.append(f"{name}: missing")
            continue
        worst, own = gap(got[name], ref)
        bound = tol["atol"] + tol["rtol"] * (scale if shared_scale else own)
        if not worst <= bound:
            out.append(f"{name}: differs by {worst:.3g}, the bound is {bound:.3g}")
    return out


def worst_gap(got: dict, want: dict, *, shared_scale: bool = False) -> float:
    """The largest gap of ``within``'s sequences, relative to the scale each is measured
    at (what a tier table reports)."""
    scale = max((abs(v) for ref in want.values() for v in ref), default=0.0)
    worst = 0.0
    for name, ref in want.items():
        d, own = gap(got[name], ref)
        worst = max(worst, d / max(scale if shared_scale else own, 1e-30))
    return worst


@dataclass(frozen=True)
class Tier:
    name: str
    effective: str  # the tier whose behaviour actually runs
    guarantee: str
    tolerance: dict | None = None
    note: str = ""
    fused_forward: bool = False  # inference forwards run compiled and fused

    @property
    def kernels(self) -> KernelChoice:
        """The training kernels this tier's steps use."""
        return KERNELS[self.effective]

    def record(self) -> dict:
        return asdict(self)


def resolve_tier(tier) -> Tier:
    """The record of ``tier``; ScellisError when it is missing or unknown."""
    if tier is None:
        raise ScellisError(
            "determinism_tier is required: choose debug (bitwise repeatable on one device), "
            "prod (within a declared tolerance of the reference) or fast"
        )
    if tier not in TIERS:
        raise ScellisError(f"determinism_tier must be one of {', '.join(TIERS)}, got {tier!r}")
    if tier == "debug":
        return Tier("debug", "debug", "bitwise identical losses and weights on one device")
    if tier == "prod":
        return Tier(
            "prod",
            "prod",
            "agrees with the reference device within tolerance (reordered kernels)",
            PROD_TOLERANCE,
        )
    return Tier(
        "fast",
        "fast",
        "fused training kernels within prod's tolerance; inference forwards fused, within "
        f"{FAST_FORWARD_TOLERANCE['rtol']:g} of the eager forward",
        PROD_TOLERANCE,
        fused_forward=True,
    )
