"""Philox4x32 counter-based RNG (base layer), pure Python; WGSL mirrors it bit for bit.

Layout, shared by every device:

* **Key** of a named sub-stream: ``(k0, k1)`` are the little-endian uint32 words 0 and 1
  of ``sha256(b"scellis.philox:" + ascii(seed) + b":" + utf8(name))``, where ``seed`` is
  written in decimal. Distinct names (``dropout``, ``shuffle``, ``augment``) therefore give
  unrelated streams for one seed.
* **Counter** words: ``c0`` = block index (a block is one Philox call, i.e. the four
  draws for elements ``4*c0 .. 4*c0+3`` of a tensor), ``c1`` = draw index (which random op
  within the step), ``c2``/``c3`` = training step, low and high 32 bits.
* **Uniform f32** from integer bits only: ``(u >> 8) * 2**-24`` (exact, in ``[0, 1)``).
* **Bernoulli(keep)** by integer threshold: kept iff ``(u >> 8) < floor(keep * 2**24)``,
  i.e. iff the uniform draw is below ``keep``; no float compare on the device.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

MASK32 = 0xFFFFFFFF
PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9  # golden ratio
PHILOX_W1 = 0xBB67AE85  # sqrt(3) - 1

Words4 = tuple[int, int, int, int]


def _mulhilo(a: int, b: int) -> tuple[int, int]:
    p = a * b
    return (p >> 32) & MASK32, p & MASK32


def philox4x32(counter: Words4, key: tuple[int, int], rounds: int = 10) -> Words4:
    """One Philox4x32 block: four uint32 words from a 4-word counter and a 2-word key."""
    c0, c1, c2, c3 = (w & MASK32 for w in counter)
    k0, k1 = (w & MASK32 for w in key)
    for r in range(rounds):
        if r:
            k0 = (k0 + PHILOX_W0) & MASK32
            k1 = (k1 + PHILOX_W1) & MASK32
        hi0, lo0 = _mulhilo(PHILOX_M0, c0)
        hi1, lo1 = _mulhilo(PHILOX_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def stream_key(seed: int, name: str) -> tuple[int, int]:
    """The key of the named sub-stream ``name`` of ``seed`` (see the module docstring)."""
    digest = hashlib.sha256(
        b"scellis.philox:" + str(int(seed)).encode() + b":" + name.encode("utf-8")
    ).digest()
    return int.from_bytes(digest[0:4], "little"), int.from_bytes(digest[4:8], "little")


def counter_words(block: int, draw: int, step: int) -> Words4:
    return block & MASK32, draw & MASK32, step & MASK32, (step >> 32) & MASK32


def raw_u32(key: tuple[int, int], n: int, draw: int, step: int) -> list[int]:
    """The first ``n`` uint32 draws of (key, draw, step): element ``i`` is word ``i % 4``
    of block ``i // 4``."""
    out: list[int] = []
    for b in range((n + 3) // 4):
        out.extend(philox4x32(counter_words(b, draw, step), key))
    return out[:n]


def u32_to_uniform(u: int) -> float:
    return (u >> 8) * (1.0 / 16777216.0)


def keep_threshold(keep: float) -> int:
    """Integer threshold on the top 24 bits for a Bernoulli with probability ``keep``."""
    if not 0.0 <= keep <= 1.0:
        raise ValueError(f"probability must lie in [0, 1], got {keep}")
    return int(keep * 16777216.0)


def uniform(key: tuple[int, int], n: int, draw: int, step: int) -> list[float]:
    return [u32_to_uniform(u) for u in raw_u32(key, n, draw, step)]


def bernoulli(key: tuple[int, int], n: int, keep: float, draw: int, step: int) -> list[bool]:
    t = keep_threshold(keep)
    return [(u >> 8) < t for u in raw_u32(key, n, draw, step)]


# callables told of every draw (the Generator and what it handed out): a step being
# recorded for replay learns which stream each of its random ops drew from
draw_watchers: list = []


@dataclass
class Generator:
    """A named stream's position: each random op takes the next draw index of the step.

    The state (seed, name, step, draw) is all there is: it is what a checkpoint stores.
    """

    seed: int = 0
    name: str = "default"
    step: int = 0
    draw: int = 0

    @property
    def key(self) -> tuple[int, int]:
        return stream_key(self.seed, self.name)

    def next_draw(self) -> tuple[tuple[int, int], int, int]:
        """(key, draw, step) for the next random op; advances the draw index."""
        d = self.draw
        self.draw += 1
        out = self.key, d, self.step
        for watch in draw_watchers:
            watch(self, out)
        return out

    def next_step(self) -> None:
        self.step += 1
        self.draw = 0

    def state(self) -> dict:
        return {
            "algorithm": "philox4x32",
            "seed": self.seed,
            "name": self.name,
            "step": self.step,
            "draw": self.draw,
        }

    @classmethod
    def from_state(cls, state: dict) -> Generator:
        return cls(state["seed"], state["name"], state["step"], state["draw"])
