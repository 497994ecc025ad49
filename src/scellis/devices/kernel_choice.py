"""Which kernels a step may use (devices layer): the determinism tier's kernel choice.

This is the one place a tier becomes kernels. A tier (``train.determinism``) names a
``KernelChoice``; the train loop sets it around each step it runs or records, and
around its validation passes (``choosing``), and every place that has a second
kernel reads it (``current``): ``runtime.primitive`` marks the ops that may run in a
reordered form (``REORDERABLE``: a split-K matmul, a one-pass sum) with the ``_order``
attr, the dense block picks the fused dense + activation op, the optimizer its
multi-tensor update and the loop its fused optimizer phase (``train.guard``), and the
WebGPU backend its subgroup reductions (``webgpu/kernels/variants.py``) and its
exp and log (``native_math``). It sits in
the devices layer, below the runtime, so that a backend reads the same choice the
ops do: the subgroup variant used to be a second mechanism (a tier attribute set on
the device), which a step could disagree with. Outside a run's step (and on
``debug``) the choice is ``FIXED``: every kernel sums in the one fixed order that
makes a run bitwise repeatable, and nothing is fused.

A recorded step keeps the kernels that ran while it was recorded, so a replayed step
runs the tier's kernels without asking again.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class KernelChoice:
    # other summation orders than debug's: K split into parts summed after (matmul), a
    # sum's terms folded in one launch instead of chunks and their sum (reduce)
    reordered: bool = False
    # the fused training kernels in use, by name (``FUSIONS``); each is a kernel of its
    # own, so the fast tier can carry the ones that pay and a bench can leave one out
    fusions: frozenset = frozenset()
    # row reductions may fold their partials through subgroup operations, where the
    # device has them (webgpu/kernels/variants.py): an order the hardware fixes
    subgroups: bool = False
    # exp and log from the adapter's own instructions (WGSL's builtins) instead of the
    # engine's range-reduced polynomials: a few ulp that differ by driver, in exchange
    # for the transcendental-heavy kernels (attention, softmax, GELU, the recurrent
    # gates, cross-entropy) running faster (webgpu/kernels/mathlib.py)
    native_math: bool = False

    @property
    def fused_training(self) -> bool:
        return bool(self.fusions)

    def fuses(self, name: str) -> bool:
        """Whether the fused training kernel ``name`` (one of ``FUSIONS``) is chosen."""
        return name in self.fusions

    def fuses_on(self, name: str, device) -> bool:
        """Whether ``name`` is chosen and pays on ``device`` (see ``SOFTWARE_ONLY``)."""
        return self.fuses(name) and (name not in SOFTWARE_ONLY or software_device(device))

    def for_inference(self) -> KernelChoice:
        """The choice of a validation pass: the same reduction variants, no training
        kernels (its forward is the tier's own: eager, or compiled and fused)."""
        return KernelChoice(subgroups=self.subgroups)


FIXED = KernelChoice()

# the fused training kernels there are: dense + bias + activation with its fused
# backward; one optimizer dispatch that reads every parameter's gradient where it lies;
# the optimizer phase's guard, clip and tally in one pass (ops.fused_step); softmax
# cross-entropy and its gradient in one op; a small LSTM layer's every step in one
# launch each way, a workgroup per batch row (webgpu/kernels/recurrent_seq.py; an
# earlier form with one workgroup for the whole batch made a 2x64 LSTM step 32x slower
# on an H100, bench/RESULTS.md); a conv of one group as one unfold of its taps and a
# fused dense layer (catalog/blocks/conv.py), where pad and concat took a launch a tap;
# inverted dropout's mask cast and two multiplies in one elementwise pass each way (ops
# ``masked_scale``, the same products in the same order, so the same bits as unfused).
FUSIONS = frozenset({"dense", "optimizer", "guard", "xent", "recurrent", "conv", "dropout"})

# fusions a real GPU's clock says cost time, kept to the reference device and CPU-emulated
# adapters, where the launches they save are host time: on an H100 the char
# Transformer's fast step took 1.21x prod's with the multi-tensor optimizer dispatch and
# 1.08x without it, the 2x64 LSTM's 1.11x and 1.06x (bench/fast_ablation.py,
# bench/RESULTS.md). On a GPU the update gathers the gradients first, as prod's does.
SOFTWARE_ONLY = frozenset({"optimizer"})


def software_device(device) -> bool:
    """The reference device (no adapter) or an adapter that emulates a GPU on the CPU."""
    info = getattr(device, "info", None)
    return info is None or bool(getattr(info, "software", False))


# ops whose kernel has a reordered form, and the ``_order`` value that asks for it
REORDERABLE = {"matmul": "split_k", "sum": "one_pass"}

_current: ContextVar[KernelChoice] = ContextVar("kernel_choice", default=FIXED)


def current() -> KernelChoice:
    return _current.get()


@contextlib.contextmanager
def choosing(choice: KernelChoice):
    """Run the block's device work under ``choice``. An ``await`` inside is fine (the
    choice is the task's own), a ``yield`` of an async generator is not: the consumer
    would run under the choice until the generator resumed."""
    token = _current.set(choice)
    try:
        yield
    finally:
        _current.reset(token)


def with_order(op: str, attrs: dict) -> dict:
    """``attrs`` with the reordered form asked for where the current choice allows it."""
    order = REORDERABLE.get(op)
    if order is None or not _current.get().reordered or "_order" in attrs:
        return attrs
    return {**attrs, "_order": order}
