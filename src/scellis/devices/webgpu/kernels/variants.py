"""Which kernel variant a launch takes (devices layer): the one place that decides.

Subgroup reductions: where the device was opened with subgroup operations, the row
reductions (sums, maxima and minima of ``reduce``, layer and RMS norm statistics) fold
their per-invocation partials through subgroup operations on the ``prod`` and ``fast``
tiers (``kernels/subgroups.py``). ``debug`` keeps the workgroup-memory trees: their
order is written in the kernel, while a subgroup operation's order is the hardware's,
fixed for one subgroup size but neither documented nor the same on another device.
A device without the feature, and a backend no run has named a tier to, runs the
trees too, bit for bit as before.
"""

from __future__ import annotations

SUBGROUP_TIERS = ("prod", "fast")


def subgroup_reductions(device_has_subgroups: bool, tier: str | None) -> bool:
    """Whether reductions fold through subgroup operations on such a device and tier."""
    return device_has_subgroups and tier in SUBGROUP_TIERS
