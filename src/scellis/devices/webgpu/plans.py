"""Launch plans (devices layer): an eager op's launches kept by the layout of its operands.

Building an op's kernel (WGSL text, meta words, bindings) and finding its pipeline by
that text was most of an eager op's host time. A plan is what the builder made on the
first call, without the buffers: per launch, the pipeline, the meta words, the grid and,
for each binding, which operand's which binding window it is. Later calls on operands
of the same layout bind their own buffers to it and dispatch.

The key holds everything a planned builder reads: the op, its attrs, and each operand's
dtype, shape, strides, offset and storage size (its binding windows follow from the
size), and which operands share one storage. Only builders that read nothing else are
planned (``PLANNED``: not those tuned through module settings, nor ops whose attrs
change every call, such as the optimizers' step counts and the random draws); a launch
bound to storage that no operand owns (a split matmul's scratch) leaves its op unplanned.
"""

from __future__ import annotations

import array
from collections import OrderedDict

from .kernels import KERNELS
from .kernels.elementwise import elementwise, fill
from .kernels.matmul import matmul_kernel

PLANNED = frozenset([elementwise, fill, matmul_kernel])
_UNPLANNED = ()  # a key whose op runs the long way each time (an empty plan)


def _window(storage, k: int) -> tuple:
    """(gpu buffer, byte offset, byte size) of the storage's ``k``-th binding window."""
    if k == 0 and len(storage.chunks) == 1 and storage.nbytes <= storage.window_bytes:
        return storage.chunks[0], 0, (storage.nbytes + 3) // 4 * 4
    return storage.windows()[k]


def _key(op: str, views: tuple, attrs: dict):
    """What the planned builders read of a call, or None where an attr is unhashable."""
    ids, layout = [], []
    for v in views:
        st = v.buf.handle
        ids.append(id(st))
        layout.append((v.dtype.name, v.shape, v.strides, v.offset, st.nbytes))
    key = (op, tuple(layout), tuple([ids.index(i) for i in ids]), tuple(attrs.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _recipe(bindings: list, views: tuple):
    """Each binding as (operand index, window index), or None where one is no operand's."""
    where: dict = {}
    for i, v in enumerate(views):
        for k, (buf, off, size) in enumerate(v.buf.handle.windows()):
            where.setdefault((id(buf), off, size), (i, k))
    found = [where.get((id(buf), off, size)) for buf, off, size in bindings]
    return None if None in found else tuple(found)


class LaunchPlans:
    """The plans of one backend, the most recent ``MAX`` kept."""

    MAX = 4096

    def __init__(self):
        self._plans: OrderedDict = OrderedDict()

    def run(self, backend, op: str, inputs, outputs, attrs: dict) -> bool:
        """Dispatch ``op`` from its plan, made now if missing; False where it has none
        (the caller then builds and launches it as usual)."""
        if KERNELS.get(op) not in PLANNED:
            return False
        views = (*inputs, *outputs)
        key = _key(op, views, attrs)
        if key is None:
            return False
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make(backend, op, inputs, outputs, attrs, views)
            if len(self._plans) > self.MAX:
                self._plans.popitem(last=False)
        if not plan:
            return False
        for pipeline, meta, meta_size, grid, recipe in plan:
            bindings = [_window(views[i].buf.handle, k) for i, k in recipe]
            bindings.append((backend.meta_buffer_of(meta), 0, meta_size))
            backend.gpu.dispatch(pipeline, bindings, grid)
        backend.stats["dispatches"] += len(plan)
        return True

    @staticmethod
    def _make(backend, op: str, inputs, outputs, attrs: dict, views: tuple) -> tuple:
        plan = []
        for src, grid in backend.encode(op, inputs, outputs, attrs):
            recipe = _recipe(src.bindings, views)
            if recipe is None:
                return _UNPLANNED
            src.check_bindings()
            meta = array.array("I", src.meta or [0]).tobytes()
            size = max(4, len(src.meta) * 4)
            plan.append((backend.pipeline(src.text()), meta, size, tuple(grid), recipe))
        return tuple(plan)
