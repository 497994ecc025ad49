"""Incremental decoding (catalog layer): a key/value cache and the blocks it can drive.

Generating text one token at a time, a causal model's earlier positions never change,
so their keys and values need not be recomputed. ``KVCache.run(model, ids)`` calls
the model on the *new* positions only: inside that call the causal attention blocks
append their new keys and values to the ones kept from earlier calls and attend over
all of them, and the position blocks (learned, sinusoidal, rotary) number the new
positions from ``cache.offset``, the count of positions already decoded.

Outside ``run`` no cache is active and every block takes its ordinary path, op for op:
training and the compiler never see the cache.

A model may be decoded this way only when each of its blocks either acts on every
position alone (dense layers, norms, embeddings, heads without pooling) or reads the
cache (causal self-attention, positions): ``Block.incremental`` says which, and
``decodes_incrementally(model)`` checks the whole tree. Anything else (a recurrent
block, bidirectional attention, a pooling head, an adapter that adds positions, a user
block) is assumed to mix positions, and such a model must be run on whole windows.
"""

from __future__ import annotations

from contextvars import ContextVar

from ...base.errors import ScellisError

_ACTIVE: ContextVar[KVCache | None] = ContextVar("scellis_kv_cache", default=None)


class KVCache:
    """Keys and values [B, H, offset, D] of the positions decoded so far, per attention
    block; ``offset`` is how many positions that is."""

    def __init__(self):
        self.offset = 0
        self._kv: dict[int, tuple] = {}

    def past(self, block):
        """(keys, values) ``block`` kept from earlier calls, or None before the first."""
        return self._kv.get(id(block))

    def keep(self, block, k, v) -> None:
        self._kv[id(block)] = (k, v)

    def run(self, model, ids, *rest):
        """``model(ids, *rest)`` on the positions after ``offset`` (``ids`` [B, T]); the
        cache then holds ``offset + T`` positions. A model with a block that may mix
        positions is refused (``check_incremental``)."""
        if self.offset == 0:
            check_incremental(model)
        token = _ACTIVE.set(self)
        try:
            out = model(ids, *rest)
        finally:
            _ACTIVE.reset(token)
        self.offset += ids.shape[1]
        return out

    def clear(self) -> None:
        self.offset = 0
        self._kv.clear()


def active_cache() -> KVCache | None:
    """The cache of the ``KVCache.run`` call under way, or None (the ordinary path)."""
    return _ACTIVE.get()


def position_offset() -> int:
    """The position of the first input position: 0 except during cached decoding."""
    cache = _ACTIVE.get()
    return 0 if cache is None else cache.offset


def blockers(model) -> list[str]:
    """The dotted names of the modules of ``model`` that cached decoding cannot drive."""
    return [
        name or type(model).__name__
        for name, m in model.named_modules()
        if not getattr(m, "incremental", False)
    ]


def decodes_incrementally(model) -> bool:
    """Whether ``KVCache.run`` computes what a whole-window call would (see the note)."""
    return not blockers(model)


def check_incremental(model) -> None:
    bad = blockers(model)
    if bad:
        raise ScellisError(
            "this model cannot be decoded with a key/value cache: "
            f"{', '.join(bad[:4])} may mix positions"
        )
