"""Training-batch augmentation (train layer): the record's ``data.augment`` section.

Two transforms of a numeric batch ``x`` (a forecaster's input windows, already in the
normalised units the model sees), applied to training batches only, never to
validation or prediction:

* ``noise: s``  adds Gaussian jitter with standard deviation ``s`` to every element;
* ``scale: a``  multiplies each row (one window) by a factor drawn uniformly from
  ``[1 - a, 1 + a)``.

Every draw comes from the Philox ``augment`` stream of the run's seed, at counter
(element block, draw index, training step): draws 0 and 1 are the two uniforms of the
Box-Muller jitter, draw 2 the per-row factors. A batch's augmentation therefore depends
only on (seed, step, element), so a resumed run sees exactly the batches an
uninterrupted one saw, and the reference device and WebGPU draw the same bits (the
uniforms come from the one Philox layout of ``base/rng``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..base.rng import Generator
from ..runtime.creation import rand, randn
from ..runtime.tensor import Tensor

STREAM = "augment"
KEYS = ("noise", "scale")


@dataclass(frozen=True)
class Augment:
    """What to do to a training batch: jitter's standard deviation, row scale spread."""

    noise: float = 0.0
    scale: float = 0.0

    @classmethod
    def of(cls, spec) -> Augment | None:
        """The ``data.augment`` mapping as an ``Augment``; None when it changes nothing
        (absent, empty, or every amount zero: such a run is bitwise one without it)."""
        if spec is None or isinstance(spec, Augment):
            return spec if spec is None or spec.active else None
        if not isinstance(spec, dict):
            raise ScellisError(f"data.augment must be a mapping, got {spec!r:.40}")
        unknown = sorted(set(spec) - set(KEYS))
        if unknown:
            raise ScellisError(f"data.augment: unknown key {unknown[0]!r} (noise | scale)")
        aug = cls(_amount(spec, "noise", None), _amount(spec, "scale", 1.0))
        return aug if aug.active else None

    @property
    def active(self) -> bool:
        return self.noise > 0.0 or self.scale > 0.0

    @no_grad()
    def apply(self, x, seed: int, step: int):
        """``x`` as training step ``step`` of a run seeded ``seed`` sees it."""
        if not isinstance(x, Tensor) or not x.dtype.is_float:
            raise ScellisError("data.augment needs numeric input windows (a float batch)")
        g = Generator(int(seed), STREAM, int(step), 0)
        out = x.cast("f32")  # f16 windows are jittered in f32, then cast back
        if self.noise > 0.0:
            out = out + randn(x.shape, x.device, gen=g) * self.noise
        g.draw = 2  # the row factors' draw index, whether or not there was jitter
        if self.scale > 0.0:
            rows = (x.shape[0],) + (1,) * (x.ndim - 1)
            u = rand(rows, x.device, gen=g)
            out = out * (u * (2.0 * self.scale) + (1.0 - self.scale))
        return out.cast(x.dtype)


def _amount(spec: dict, key: str, below: float | None) -> float:
    v = spec.get(key, 0.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v < math.inf:
        raise ScellisError(f"data.augment.{key} must be a finite number >= 0, got {v!r:.40}")
    if below is not None and v >= below:
        raise ScellisError(f"data.augment.{key} must be < {below:g}, got {v!r:.40}")
    return float(v)
