"""Kept launches (devices layer): an eager op's kernels built once per signature.

Building an op's kernels (WGSL text, meta words, bindings), then finding each pipeline
by its text and packing its meta words, costs more host time than the launches. A
builder's output depends only on what the signature holds: the op, its attrs, each
operand's dtype, shape, strides, offset and storage size (its binding windows follow
from the size), which operands share one storage, and the device's limits. So the
backend builds once per signature and keeps, per launch, the kernel without buffers,
its pipeline (found on the first dispatch), meta words, grid and a binding recipe;
later calls bind their own buffers and dispatch, or (``encode``) get the kernels back
bound to them.

A binding is found among the operands' storages or in the backend's scratch storage
(the K-split matmul's partial products); a launch kept with the scratch is built again
once that storage has been replaced by a larger one. A launch bound to a buffer of the
builder's own leaves its signature built on every call.
"""

from __future__ import annotations

import array

from .kernels.common import Storage
from .kernels.elementwise import elementwise, fill
from .kernels.matmul import matmul_kernel

MAX_ENTRIES = 4096  # signatures kept; the oldest beyond this are built again
# the builders that read nothing but their arguments and the device's limits. The
# others are left out: they also read module-level settings (attention variants and
# tiles, scratch budgets) that tuning runs and tests change while a backend is open,
# which no signature sees; and ops whose attrs change every call (the optimizers' step
# counts, random draws) would only fill the cache. None of these three reads the
# Source's ``subgroups`` variant (the kernel choice's), which the key leaves out; the
# elementwise kernels read its ``native_math``, which the key holds.
CACHED_BUILDERS = frozenset([elementwise, fill, matmul_kernel])
_NOT_KEPT = ()  # the entry of a signature whose launches bind a buffer no slot names


class Limits(dict):
    """A device's limits, with ``version`` counting their changes in place (item
    assignment, deletion, ``update``: a test lowering one on a live backend), which the
    signature holds: launches kept under other limits are not reused."""

    version = 0

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def __delitem__(self, key) -> None:
        super().__delitem__(key)
        self.version += 1

    def update(self, *args, **kwargs) -> None:
        super().update(*args, **kwargs)
        self.version += 1


class Launch:
    """One kept launch: the kernel without buffers, its grid, the meta words as bytes and
    their binding size, and per binding (slot, chunk index, byte offset, byte size), slot
    ``len(views)`` being the scratch; ``pipeline`` is found on the first dispatch."""

    __slots__ = ("source", "grid", "recipe", "meta", "meta_size", "pipeline")

    def __init__(self, source, grid: tuple, recipe: tuple):
        self.source, self.grid, self.recipe = source, grid, recipe
        self.meta = array.array("I", source.meta or [0]).tobytes()
        self.meta_size = max(4, len(source.meta) * 4)
        self.pipeline = None


def _plain(value):
    """``value`` as a key part that tells apart what the kernels' meta words do (0.0 from
    -0.0, 1 from 1.0 and True), or None where it is not a plain value (an object's
    identity is no signature: its id may be reused by another)."""
    cls = value.__class__
    if cls is float:
        return repr(value)
    if cls in (int, bool, str) or value is None:
        return cls, value
    if cls is tuple:
        parts = tuple([_plain(v) for v in value])
        return None if None in parts else parts
    return None


def signature(
    op: str, builder, views: tuple, attrs: dict, limits: Limits, native_math: bool = False
) -> tuple:
    """(the key of an op's launches, the views' storages), or (None, None) where they are
    not kept (a builder outside CACHED_BUILDERS, an attr that is not a plain value).
    ``native_math``: the kernel choice's exp and log, which elementwise kernels read."""
    if builder not in CACHED_BUILDERS:
        return None, None
    # one loop, no comprehension: this runs for every eager op
    storages, ids, layout = [], [], []
    for v in views:
        st = v.buf.handle
        storages.append(st)
        ids.append(id(st))
        layout.append((v.dtype.name, v.shape, v.strides, v.offset, st.nbytes))
    shared = tuple([ids.index(i) for i in ids])
    kept_attrs = ()
    if attrs:
        kept_attrs = tuple([(k, _plain(v)) for k, v in attrs.items()])
        if any(part is None for _, part in kept_attrs):
            return None, None
    return (op, tuple(layout), shared, kept_attrs, limits.version, native_math), storages


def capture(launches: list, slots: list) -> tuple:
    """``launches`` as (Launch, ...), or _NOT_KEPT if a binding is a window of none of
    ``slots`` (the views' storages, then the scratch or None): a builder that made a
    buffer of its own."""
    where: dict[int, tuple[int, int]] = {}
    for slot, st in enumerate(slots):
        for c, chunk in enumerate(st.chunks if st is not None else ()):
            where.setdefault(id(chunk), (slot, c))
    kept = []
    for src, grid in launches:
        recipe = []
        for buf, offset, size in src.bindings:
            at = where.get(id(buf))
            if at is None:
                return _NOT_KEPT
            recipe.append((*at, offset, size))
        kept.append(Launch(src.with_bindings([]), tuple(grid), tuple(recipe)))
    return tuple(kept)


def _uses_scratch(launches: tuple, slot: int) -> bool:
    return any(s == slot for one in launches for s, *_ in one.recipe)


class LaunchCache:
    """Signature -> (launches, the scratch storage they bind or None); past MAX_ENTRIES
    the oldest goes first. A hit does not refresh its entry: that would hash the key a
    second time on every eager op, for a bound few programs reach."""

    def __init__(self):
        self._entries: dict[tuple, tuple] = {}

    def get(self, key: tuple, scratch: Storage | None) -> tuple | None:
        """The kept launches, () where the signature is built each call, or None where
        none are kept (or they bind a scratch storage that has since grown)."""
        entry = self._entries.get(key)
        if entry is None or (entry[1] is not None and entry[1] is not scratch):
            return None
        return entry[0]

    def put(self, key: tuple, launches: list, slots: list) -> tuple:
        """Keep ``launches`` (bound to ``slots``: the views' storages, then the scratch)
        under ``key``; returns them kept, or () where they cannot be."""
        kept = capture(launches, slots)
        scratch = len(slots) - 1
        bound = slots[scratch] if kept and _uses_scratch(kept, scratch) else None
        self._entries.pop(key, None)  # a replaced entry counts as new
        self._entries[key] = (kept, bound)
        if len(self._entries) > MAX_ENTRIES:
            del self._entries[next(iter(self._entries))]
        return kept


def bind(launch: Launch, slots: list) -> list:
    """``launch``'s bindings on ``slots`` (the views' storages, then the scratch)."""
    return [(slots[s].chunks[c], o, n) for s, c, o, n in launch.recipe]
