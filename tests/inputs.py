"""Seeded input specs for the op cases: each draws one array from the case's generator.

A spec's ``make(rng, prev)`` sees the arrays drawn before it (``prev``), so an input can
be placed relative to another one (``Near``, ``Ties``) to keep a difference off a kink.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np


def case_rng(name: str, salt: int = 0) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()) + salt)


@dataclass(frozen=True)
class N:
    """Standard normal values (times ``scale``)."""

    shape: tuple
    scale: float = 1.0

    def make(self, rng, prev):
        return rng.standard_normal(self.shape) * self.scale


@dataclass(frozen=True)
class U:
    """Uniform values in [lo, hi)."""

    shape: tuple
    lo: float = 0.5
    hi: float = 2.0

    def make(self, rng, prev):
        return rng.uniform(self.lo, self.hi, self.shape)


@dataclass(frozen=True)
class Away:
    """Normal values at least ``margin`` from every kink in ``points``; with ``mixed``,
    the first entry is positive and the second negative (both sides of a kink at 0)."""

    shape: tuple
    points: tuple = (0.0,)
    margin: float = 0.05
    scale: float = 1.0
    mixed: bool = False

    def make(self, rng, prev):
        x = rng.standard_normal(self.shape) * self.scale
        for _ in range(100):
            if self.mixed:
                flat = x.reshape(-1)
                flat[:2] = np.abs(flat[:2]) * np.array([1.0, -1.0])[: flat[:2].size]
            bad = np.zeros(x.shape, bool)
            for p in self.points:
                bad |= np.abs(x - p) < self.margin
            if not bad.any():
                return x
            x = np.where(bad, rng.standard_normal(self.shape) * self.scale, x)
        raise AssertionError("could not draw values away from the kinks")


@dataclass(frozen=True)
class Grid:
    """Values on a 0.1 grid plus ``offset`` (+-0.01 jitter): two grids with offsets 0 and
    0.05 never come closer than 0.03, so maximum/minimum see no ties."""

    shape: tuple
    offset: float = 0.0

    def make(self, rng, prev):
        k = rng.integers(-20, 21, self.shape)
        return k * 0.1 + self.offset + rng.uniform(-0.01, 0.01, self.shape)


@dataclass(frozen=True)
class Distinct:
    """A shuffled ladder of values 0.05 apart (+-0.01): no ties anywhere (max/min)."""

    shape: tuple

    def make(self, rng, prev):
        n = int(np.prod(self.shape, dtype=np.int64))
        ladder = (rng.permutation(n) - n / 2) * min(0.05, 10.0 / max(n, 1))
        return ladder.reshape(self.shape) + rng.uniform(-0.01, 0.01, self.shape)


@dataclass(frozen=True)
class Dyadic:
    """Multiples of 1/64 below 8 in size: exact in f16, and so are x +- 1/64."""

    shape: tuple

    def make(self, rng, prev):
        return rng.integers(-500, 501, self.shape) / 64.0


@dataclass(frozen=True)
class Levels:
    """Floats on the half-integers lo/2 .. k/2 (lo = -k unless given): ties, exact zeros
    and exact bounds."""

    shape: tuple
    k: int = 2
    lo: int | None = None

    def make(self, rng, prev):
        lo = -self.k if self.lo is None else self.lo
        return rng.integers(lo, self.k + 1, self.shape) / 2.0


@dataclass(frozen=True)
class Ties:
    """``prev[of]`` with about half its entries redrawn: equal and unequal pairs."""

    of: int

    def make(self, rng, prev):
        base = prev[self.of]
        fresh = rng.standard_normal(base.shape).astype(base.dtype)
        if base.dtype.kind in "iu":
            fresh = rng.integers(-3, 4, base.shape).astype(base.dtype)
        keep = rng.random(base.shape) < 0.5
        return np.where(keep, base, fresh)


@dataclass(frozen=True)
class Idx:
    """Integer indices in [lo, hi); with ``ignore`` set, some (never all) entries are it."""

    shape: tuple
    hi: int
    lo: int = 0
    ignore: int | None = None

    def make(self, rng, prev):
        x = rng.integers(self.lo, self.hi, self.shape).astype(np.int32)
        if self.ignore is not None:
            flat = x.reshape(-1)
            assert flat.size >= 2, "ignore needs room for a kept and an ignored entry"
            drop = rng.permutation(flat.size)[: max(1, flat.size // 3)]
            flat[drop] = self.ignore
            x = flat.reshape(self.shape)
        return x


@dataclass(frozen=True)
class Mask:
    """A bool mask with both values present."""

    shape: tuple

    def make(self, rng, prev):
        m = rng.random(self.shape) < 0.5
        if m.size >= 2:
            m.reshape(-1)[:2] = (True, False)
        return m


@dataclass(frozen=True)
class Near:
    """``prev[of]`` plus values away from ``points`` (keeps a difference off a kink)."""

    of: int
    points: tuple = (0.0,)
    margin: float = 0.05

    def make(self, rng, prev):
        base = prev[self.of]
        return base + Away(base.shape, self.points, self.margin).make(rng, prev)
