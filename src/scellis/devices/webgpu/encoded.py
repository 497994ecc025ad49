"""Encoded launches kept across calls (devices layer): what an eager op's kernels are.

A kernel builder's output (WGSL text, meta words, grid, which window of which buffer
each binding is) depends only on the op, its attrs, the views' geometry and dtypes, the
layout of their storages and the device. Building it is string work that costs more
host time than launching it, so the backend builds once per such signature and, on
later calls, binds the same kernels to that call's buffers. Which operands share a
storage is part of the signature (a kernel may be built differently in place); so is
the K-split scratch storage, which the backend replaces only when it grows.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .kernels.common import Storage

MAX_ENTRIES = 1024  # least recently used signatures beyond this are built again
# the ops whose builders read nothing but the signature and the device's limits (no
# module-level switch a test or a tuning run may change): the eager matmul, whose
# building cost more than its launches (the K split's two kernels above all)
KEPT_OPS = frozenset({"matmul"})


@dataclass(frozen=True)
class Encoded:
    """One signature's launches: each a kernel without buffers, its grid, and per binding
    (storage slot, chunk index, byte offset, byte size); slot len(views) is the scratch."""

    launches: tuple
    scratch: Storage | None


def _plain(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, tuple) and all(_plain(v) for v in value)


def signature(op: str, views: list, attrs: dict, limits: dict) -> tuple | None:
    """The key of an op's launches, or None where they are not kept (an op outside
    KEPT_OPS, an attr that is not a plain value, a view without GPU storage)."""
    if op not in KEPT_OPS:
        return None
    storages = [v.buf.handle for v in views]
    if not all(isinstance(st, Storage) for st in storages):
        return None
    if not all(_plain(v) for v in attrs.values()):
        return None
    first: dict[int, int] = {}
    shared = tuple(first.setdefault(id(st), i) for i, st in enumerate(storages))
    geometry = tuple(
        (v.shape, v.strides, v.offset, v.dtype.name,
         st.nbytes, st.chunk_bytes, st.window_bytes, len(st.chunks))
        for v, st in zip(views, storages)
    )  # fmt: skip
    # repr tells 0.0 from -0.0, and 1 from 1.0 and True, as the kernels' meta words do
    return op, repr(sorted(attrs.items())), geometry, shared, tuple(limits.values())


def capture(launches: list, storages: list, scratch: Storage | None) -> Encoded | None:
    """``launches`` as an Encoded, or None if a binding is not a window of ``storages``
    or ``scratch`` (a builder that made a buffer of its own)."""
    where: dict[int, tuple[int, int]] = {}
    for slot, st in enumerate([*storages, scratch]):
        for c, chunk in enumerate(st.chunks if st is not None else ()):
            where.setdefault(id(chunk), (slot, c))
    kept = []
    for src, grid in launches:
        recipe = []
        for buf, offset, size in src.bindings:
            at = where.get(id(buf))
            if at is None:
                return None
            recipe.append((*at, offset, size))
        kept.append((src.with_bindings([]), tuple(grid), tuple(recipe)))
    uses_scratch = any(s == len(storages) for _, _, r in kept for s, *_ in r)
    return Encoded(tuple(kept), scratch if uses_scratch else None)


def rebind(entry: Encoded, storages: list, scratch: Storage | None) -> list | None:
    """The entry's launches bound to ``storages`` (and the scratch), or None when the
    scratch they were built for has since been replaced by a larger one."""
    if entry.scratch is not None and entry.scratch is not scratch:
        return None
    pool = [*storages, scratch]
    return [
        (src.with_bindings([(pool[s].chunks[c], o, n) for s, c, o, n in recipe]), grid)
        for src, grid, recipe in entry.launches
    ]


class EncodeCache:
    """Signature -> Encoded, least recently used first out."""

    def __init__(self):
        self._entries: OrderedDict[tuple, Encoded] = OrderedDict()
        self.hits = 0

    def get(self, key: tuple, storages: list, scratch: Storage | None) -> list | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        launches = rebind(entry, storages, scratch)
        if launches is not None:
            self._entries.move_to_end(key)
            self.hits += 1
        return launches

    def put(self, key: tuple, launches: list, storages: list, scratch: Storage | None) -> None:
        entry = capture(launches, storages, scratch)
        if entry is None:
            return
        self._entries[key] = entry
        self._entries.move_to_end(key)
        if len(self._entries) > MAX_ENTRIES:
            self._entries.popitem(last=False)
