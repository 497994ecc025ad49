"""Determinism tiers (train layer): what a run promises about repeating itself.

Every run names its tier; a missing or unknown tier is refused, never defaulted.

* ``debug``: two runs on one device with the same inputs give bitwise identical
  losses and weights. Every built-in kernel already has a fixed reduction order and
  no float atomics (see the WebGPU reduce, matmul and index kernels), and every random
  draw is a Philox function of (seed, stream, step, draw), so nothing changes here.
* ``prod``: a run agrees with the reference device within ``PROD_TOLERANCE``
  (measured: an f32 MLP, 20 Adam steps, WebGPU on lavapipe vs the reference device
  differ by < 1e-6 relative; the declared bound leaves headroom for other adapters).
* ``fast``: may use fused and reordered kernels. None exist for training yet, so a
  fast run is a prod run today, and its record says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..base.errors import ScellisError

TIERS = ("debug", "prod", "fast")

# |a - b| <= atol + rtol * |b| on the logged losses and on every weight, b = reference,
# for f32 training over tens of steps (the error grows with steps; long runs diverge)
PROD_TOLERANCE = {"f32": {"rtol": 1e-4, "atol": 1e-6}, "mixed_f16": {"rtol": 2e-2, "atol": 1e-3}}


@dataclass(frozen=True)
class Tier:
    name: str
    effective: str  # the tier whose behaviour actually runs
    guarantee: str
    tolerance: dict | None = None
    note: str = ""

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
            "prod", "prod", "agrees with the reference device within tolerance", PROD_TOLERANCE
        )
    return Tier(
        "fast",
        "prod",
        "agrees with the reference device within tolerance",
        PROD_TOLERANCE,
        note="no fused or reordered training kernels exist yet: fast runs exactly as prod",
    )
