"""Which kernel variant a launch takes (devices layer): the one place that decides.

Matrix units: with ``SCELLIS_MATRIX_UNITS=1``, a device opened with subgroup matrices
(Dawn's experimental feature) runs f16 products on the unit configuration ``matrix_unit``
picks, where the matmul's own rule allows another order (kernels/matmul.py
``_on_units``). Opt-in until the kernel has been checked and timed on a GPU's units:
so far it has run only with its builtins emulated.

Subgroup reductions: where the device was opened with subgroup operations, the row
reductions (sums, maxima and minima of ``reduce``, layer and RMS norm statistics) fold
their per-invocation partials through subgroup operations when the step's kernel
choice allows it (``devices.kernel_choice``: the ``prod`` and ``fast`` tiers).
``debug`` keeps the workgroup-memory trees: their order is written in the kernel,
while a subgroup operation's order is the hardware's, fixed for one subgroup size but
neither documented nor the same on another device. A device without the feature, and
work outside any run's step, run the trees too, bit for bit as before.
"""

from __future__ import annotations

import os

from .matmul_units import FEATURE as MATRIX_FEATURE
from .matmul_units import MatrixUnit, choose_unit


def subgroup_reductions(device_has_subgroups: bool, chosen: bool) -> bool:
    """Whether reductions fold through subgroup operations on such a device, where the
    kernel choice allows them."""
    return device_has_subgroups and chosen


def matrix_unit(features: list[str], configs: list[dict]) -> MatrixUnit | None:
    """The matrix unit f16 products may use on a device opened with ``features`` on an
    adapter that lists ``configs``; None where there is none."""
    if os.environ.get("SCELLIS_MATRIX_UNITS", "") in ("", "0"):
        return None
    return choose_unit(configs) if MATRIX_FEATURE in features else None
