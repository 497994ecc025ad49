"""Row shuffling (data layer): epoch orders drawn from the Philox ``shuffle`` stream.

The order of epoch ``e`` sorts the row indices by the draws of counter (block, draw 0,
step ``e``) under key ``stream_key(seed, "shuffle")``, ties broken by index, so it
depends only on (seed, e, n) on every host. The train layer's ``Batches`` reuses it.
"""

from __future__ import annotations

from ..base.rng import raw_u32, stream_key


def shuffled_order(n: int, seed: int, epoch: int) -> list[int]:
    """The row order of ``epoch``: a permutation of ``range(n)`` from the shuffle stream."""
    draws = raw_u32(stream_key(seed, "shuffle"), n, 0, epoch)
    return sorted(range(n), key=lambda i: (draws[i], i))
