"""WebGPU backend (devices layer): the Backend protocol over a ``GPU`` adapter.

It owns the buffer pool (live/peak accounting), the pipeline cache (one compile per
kernel source per device), the meta-buffer cache and the kept launches of eager ops
(``launch_cache.py``), and turns ``run(op, ...)`` into one or more dispatches through
the kernel builders. Limits come from the adapter and may be lowered (never raised) by
``limits=`` for testing.
"""

from __future__ import annotations

import array
import time
from collections import OrderedDict

from ...base.dtypes import DType, f32
from ...base.errors import DeviceError, LimitError
from ..base import Buffer, OneInstance, View
from ..kernel_choice import current as kernel_choice
from .gpu import GPU
from .kernels import KERNELS
from .kernels.common import Source, Storage, storage_itemsize
from .kernels.variants import matrix_unit, subgroup_reductions
from .kernels.workgroup_memory import workgroup_bytes
from .launch_cache import LaunchCache, Limits, bind, signature

# the (numel, dtype) sizes alloc keeps checked, at most (a run uses a few hundred)
_SIZES_KEPT = 4096


def size_class(nbytes: int) -> int:
    """Pool bucket: powers of two from 256 B, then 1/8 steps above 1 MiB; what ``alloc``
    counts in ``live_bytes`` (the memory planner predicts the peak with it)."""
    n = max(256, nbytes)
    p = 1 << (n - 1).bit_length()
    if p <= 1 << 20:
        return p
    step = p // 16
    return -(-n // step) * step


def storage_bytes(numel: int, dtype: DType) -> int:
    """Bytes a tensor of ``numel`` elements occupies in its storage (bool as u32)."""
    nbytes = max(4, numel * storage_itemsize(dtype))
    return (nbytes + 3) // 4 * 4


def binding_geometry(limits: dict) -> tuple[int, int]:
    """(window_bytes, chunk_bytes) for ``limits``: binding windows are whole multiples of
    the offset alignment (and of 16 bytes); a GPU buffer (chunk) is whole windows."""
    align = limits.get("min_storage_buffer_offset_alignment", 256)
    bind = limits["max_storage_buffer_binding_size"]
    window = max(align, bind // max(align, 16) * max(align, 16))
    chunk = min(limits["max_buffer_size"], 1 << 62) // window * window
    return window, chunk


class WebGPUBackend(OneInstance):
    name = "webgpu"

    def __init__(
        self, gpu: GPU | None = None, limits: dict | None = None, adapter: str | None = None
    ):
        self._opened = time.perf_counter()
        if gpu is None:
            from_native = _native_gpu()
            gpu = from_native(adapter)
        self.gpu = gpu
        self.info = gpu.info
        configs = self.info.extra.get("subgroup_matrix_configs", [])
        self.matrix = matrix_unit(self.info.device_features, configs)
        self.limits = Limits(gpu.limits)
        for k, v in (limits or {}).items():
            if k not in self.limits:
                raise DeviceError(f"unknown limit {k!r}")
            if v > self.limits[k]:
                raise DeviceError(f"limit {k} can be lowered, not raised above {self.limits[k]}")
            self.limits[k] = int(v)
        self.window_bytes, self.chunk_bytes = binding_geometry(self.limits)
        self._pool: dict[int, list[Storage]] = {}
        self._sizes: dict[tuple[int, str], tuple[int, int]] = {}  # alloc's checked sizes
        self._scratch_buf: Buffer | None = None
        self._scratch_storage: Storage | None = None  # its storage, read on every eager op
        self._pipelines: dict[str, object] = {}
        self._meta: OrderedDict[bytes, object] = OrderedDict()
        self._launches = LaunchCache()
        self.live_bytes = 0
        self.peak_bytes = 0
        self.pooled_bytes = 0
        # the pool's own high-water mark: storages in use plus the free ones it keeps
        # (what the device really holds; above ``peak_bytes`` by the pool's fragmentation)
        self.held_peak_bytes = 0
        self.stats = {"pipelines": 0, "compile_s": 0.0, "dispatches": 0, "allocs": 0, "reuses": 0,
                      "read_bytes": 0}  # fmt: skip
        # a replay.Trace while a step is being recorded: it sees every run, launch,
        # upload and readback (devices/webgpu/replay.py)
        self.recorder = None
        # (op, host seconds to encode and launch it) while a profile collects them
        self.host_times: list | None = None
        # a dispatch timer's labels carry the operands' shapes (bench/tier_kernels.py)
        self.label_shapes = False

    # -- the Backend protocol --
    def supports(self, dtype: DType) -> bool:
        if dtype.name == "f64":
            return False
        return dtype.name != "f16" or self.info.has_f16

    def alloc(self, numel: int, dtype: DType) -> Buffer:
        # every eager op allocates its output: the checked sizes are kept per (numel,
        # dtype), and the pool's accounting is written out rather than called
        sized = self._sizes.get((numel, dtype.name))
        if sized is None:
            sized = self._checked_size(numel, dtype)
        nbytes, key = sized
        st = self.recorder.reuse(key) if self.recorder is not None else None
        if st is None:
            free = self._pool.get(key)
            if free:
                self.pooled_bytes -= key
                self.stats["reuses"] += 1
                st = free.pop()
            else:
                st = self._new_storage(key)
            live = self.live_bytes = self.live_bytes + key
            if live > self.peak_bytes:
                self.peak_bytes = live
            if live + self.pooled_bytes > self.held_peak_bytes:
                self.held_peak_bytes = live + self.pooled_bytes
            if self.recorder is not None:
                self.recorder.claim(st)
        st.nbytes = nbytes
        return Buffer(self, st, numel, dtype)

    def _checked_size(self, numel: int, dtype: DType) -> tuple[int, int]:
        """(bytes, pool size class) of a buffer of ``numel`` ``dtype`` elements; an error
        for a dtype the adapter lacks, or a size over the binding limits."""
        if not self.supports(dtype):
            raise DeviceError(f"WebGPU on {self.info.name} has no {dtype}")
        nbytes = storage_bytes(numel, dtype)
        key = size_class(nbytes)
        windows = -(-key // self.window_bytes)
        if windows + 1 > self.limits["max_storage_buffers_per_shader_stage"]:
            raise LimitError(
                f"a tensor of {nbytes} bytes needs {windows} bindings of "
                f"maxStorageBufferBindingSize={self.limits['max_storage_buffer_binding_size']}"
                f", over maxStorageBuffersPerShaderStage="
                f"{self.limits['max_storage_buffers_per_shader_stage']}"
            )
        if len(self._sizes) >= _SIZES_KEPT:
            self._sizes.clear()
        self._sizes[(numel, dtype.name)] = (nbytes, key)
        return nbytes, key

    def _new_storage(self, size: int) -> Storage:
        chunks, left = [], size
        while left > 0:
            n = min(left, self.chunk_bytes)
            chunks.append(self.gpu.create_buffer(n))
            left -= n
        self.stats["allocs"] += 1
        return Storage(chunks, self.chunk_bytes, size, self.window_bytes, pool_key=size)

    def release(self, buf: Buffer) -> None:
        st: Storage = buf.handle
        buf.handle = None
        owner = st.owner() if st.owner is not None else None
        if owner is not None:
            # a recorded step's storage stays its schedule's (and counts as live): the
            # step reuses it for a later buffer of its own, and replays write it again
            owner.let_go(st)
            return
        self._to_pool(st)

    def _to_pool(self, st: Storage) -> None:
        key = st.pool_key
        self.live_bytes -= key
        free = self._pool.get(key)
        if free is None:
            free = self._pool[key] = []
        free.append(st)
        self.pooled_bytes += key

    def disown(self, trace) -> None:
        """Hand a recorded step's storages back: those its buffers still hold return to
        the pool when the buffers die, the free ones now (a discarded trace, or a
        released schedule)."""
        self.disown_storage(trace.owned, trace.free)

    def disown_storage(self, owned: list, free: dict) -> None:
        """``disown`` on a trace's containers (emptied in place); also a trace's
        finaliser, for one dropped without being disowned."""
        for st in owned:
            st.owner = None
        owned.clear()
        for sts in free.values():
            for st in sts:
                self._to_pool(st)
        free.clear()

    def empty_pool(self) -> None:
        """Destroy the free storages the pool keeps (queued work that binds one is
        submitted first)."""
        if self._pool:
            self.gpu.flush()
        for lst in self._pool.values():
            for st in lst:
                for c in st.chunks:
                    self.gpu.destroy_buffer(c)
        self._pool.clear()
        self.pooled_bytes = 0

    def upload(self, buf: Buffer, data: bytes) -> None:
        if self.recorder is not None:
            self.recorder.on_upload(buf, data)
        if buf.dtype.name == "bool":
            # one u32 per host byte (array("I", bytes) would reinterpret the bytes)
            data = array.array("I", list(data)).tobytes()
        st: Storage = buf.handle
        # the buffer's own size, not its storage's latest: a replayed upload writes a
        # storage that later buffers of the recorded step reused
        if len(data) > storage_bytes(buf.numel, buf.dtype):
            raise DeviceError("upload larger than the buffer")
        at = 0
        for c in st.chunks:
            part = data[at : at + st.chunk_bytes]
            if not part:
                break
            self.gpu.write_buffer(c, 0, part)
            at += len(part)

    async def read(self, buf: Buffer, start: int = 0, count: int | None = None) -> bytes:
        if self.recorder is not None:
            self.recorder.on_read(buf)
        count = buf.numel - start if count is None else count
        data = await self._read(buf, start, count) if count > 0 else b""
        if "first_result_s" not in self.stats:
            # from opening the device to the first values on the host: adapter, pipeline
            # compiles and the first dispatches all count
            self.stats["first_result_s"] = time.perf_counter() - self._opened
        return data

    async def _read(self, buf: Buffer, start: int, count: int) -> bytes:
        """Elements ``[start, start + count)``: one copy and one mapping per chunk the
        range touches, each only as long as its part of the range."""
        st: Storage = buf.handle
        item = storage_itemsize(buf.dtype)
        lo, hi = start * item, (start + count) * item
        # copies move whole 4-byte words (COPY_BUFFER_ALIGNMENT): widen the range to
        # them, then cut the extra bytes off; storage sizes and chunk bounds are words too
        first, end = lo // 4 * 4, -(-hi // 4) * 4
        parts = []
        for k, c in enumerate(st.chunks):
            at = k * st.chunk_bytes
            a, b = max(first, at), min(end, at + st.chunk_bytes)
            if a < b:
                parts.append(await self.gpu.read_buffer(c, a - at, b - a))
        self.stats["read_bytes"] += end - first
        data = b"".join(parts)[lo - first : hi - first]
        if buf.dtype.name == "bool":
            words = array.array("I")
            words.frombytes(data)
            data = bytes(1 if w else 0 for w in words)
        return data

    def run(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> None:
        for o in outputs:
            if o.buf.numel == 0:
                return
        t0 = time.perf_counter() if self.host_times is not None else 0.0
        # what a dispatch timer calls the next launches
        self.gpu.label = shape_label(op, inputs) if self.label_shapes else op
        if self.recorder is None:
            kept, got = self._kept(op, inputs, outputs, attrs)
        else:  # a recorded step keeps its launches as Sources: built by ``encode``
            kept, got = None, self.encode(op, inputs, outputs, attrs)
            self.recorder.on_run(op, inputs, outputs, attrs)
        if kept is None:
            for one_src, grid in got:
                self.launch(one_src, grid)
        else:  # kept launches: no WGSL text, no pipeline lookup by text, no meta packing
            dispatch, meta_buffer = self.gpu.dispatch, self.meta_buffer_of
            for one in kept:
                pipeline = one.pipeline
                if pipeline is None:
                    one.source.check_bindings()
                    pipeline = one.pipeline = self.pipeline(one.source.text())
                # the recipe's windows of this call's storages (``bind``, inlined: every op)
                bindings = [(got[s].chunks[c], o, n) for s, c, o, n in one.recipe]
                bindings.append((meta_buffer(one.meta), 0, one.meta_size))
                dispatch(pipeline, bindings, one.grid)
            self.stats["dispatches"] += len(kept)
        if self.host_times is not None:
            self.host_times.append((op, time.perf_counter() - t0))

    def encode(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> list:
        """The launches ``run`` would make, as [(Source, grid), ...]; nothing is dispatched.
        Kept per signature (``launch_cache.py``), then bound to each call's buffers."""
        kept, got = self._kept(op, inputs, outputs, attrs)
        if kept is None:
            return got
        return [(one.source.with_bindings(bind(one, got)), one.grid) for one in kept]

    def _kept(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> tuple:
        """(the op's kept launches, the slots they bind: the views' storages, then the
        scratch), kept now if missing; or (None, the launches built for this call) where
        the signature is not kept."""
        views, native = (*inputs, *outputs), kernel_choice().native_math
        key, slots = signature(op, KERNELS.get(op), views, attrs, self.limits, native)
        if key is None:
            return None, self._build(op, inputs, outputs, attrs)
        scratch = self._scratch_storage
        kept = self._launches.get(key, scratch)
        if kept:
            slots.append(scratch)
            return kept, slots
        built = self._build(op, inputs, outputs, attrs)
        if kept is None:
            slots.append(self._scratch_storage)  # after building: it may have grown
            kept = self._launches.put(key, built, slots)
            if kept:
                return kept, slots
        return None, built

    def _build(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> list:
        builder = KERNELS.get(op)
        if builder is None:
            raise DeviceError(f"the WebGPU backend has no kernel for {op!r}")
        src = self._source()
        src.scratch = self._scratch
        result = builder(src, op, inputs, outputs, attrs)
        # a builder fills ``src`` and returns its grid, or returns [(Source, grid), ...]
        return result if isinstance(result, list) else [(src, result)]

    # -- kernels --
    def source(self) -> Source:
        """An empty kernel for this device's limits (the IR's fused kernels start here)."""
        return self._source()

    def _source(self) -> Source:
        choice = kernel_choice()
        return Source(
            self.limits, self.info.has_f16, software=self.info.software,
            subgroups=subgroup_reductions(self.info.subgroups_on, choice.subgroups),
            native_math=choice.native_math, matrix=self.matrix,
        )  # fmt: skip

    def _scratch(self, numel: int) -> View:
        """``numel`` f32 of scratch storage, for results passed between the launches of one
        op (the K-split matmul's partial products). One storage, grown on demand, outside
        the pool and never destroyed: the queue runs in order, so each op's launches are
        done with it before the next op's write it, and a recorded schedule's launches
        keep the storage they were given."""
        nbytes = numel * 4
        if self._scratch_buf is None or self._scratch_buf.numel < numel:
            st = self._new_storage(size_class(nbytes))
            st.nbytes = size_class(nbytes)
            self._scratch_buf = Buffer(None, st, st.nbytes // 4, f32)
            self._scratch_storage = st
        return View(self._scratch_buf, (numel,), (1,), 0, f32)

    def launch(self, src: Source, grid) -> None:
        src.check_bindings()
        pipeline = self.pipeline(src.text())
        meta = self._meta_buffer(src.meta)
        bindings = list(src.bindings) + [(meta, 0, max(4, len(src.meta) * 4))]
        if self.recorder is not None:
            self.recorder.on_launch(pipeline, src, grid)
        self.gpu.dispatch(pipeline, bindings, grid)
        self.stats["dispatches"] += 1

    def pipeline(self, code: str):
        p = self._pipelines.get(code)
        if p is None:
            _check_workgroup_memory(code, self.limits, getattr(self.gpu, "label", None))
            t0 = time.perf_counter()
            p = self.gpu.create_pipeline(code)
            self.stats["compile_s"] += time.perf_counter() - t0
            self.stats["pipelines"] += 1
            self._pipelines[code] = p
        return p

    def _meta_buffer(self, words: list[int]):
        return self.meta_buffer_of(array.array("I", words or [0]).tobytes())

    def meta_buffer_of(self, data: bytes):
        """The GPU buffer holding the meta words ``data``, made once and reused."""
        buf = self._meta.get(data)
        if buf is None:
            buf = self.gpu.create_buffer(len(data), data=data)
            self._meta[data] = buf
            if len(self._meta) > 4096:
                _, old = self._meta.popitem(last=False)
                self.gpu.flush()  # the evicted buffer may still be in unsubmitted work
                self.gpu.destroy_buffer(old)
        else:
            self._meta.move_to_end(data)
        return buf

    def sync(self) -> None:
        self.gpu.flush()

    # -- accounting --
    def memory(self) -> dict:
        return {
            "live_bytes": self.live_bytes,
            "peak_bytes": self.peak_bytes,
            "pooled_bytes": self.pooled_bytes,
            "held_peak_bytes": self.held_peak_bytes,
            # kernels' temporaries (outside the pool, kept once grown)
            "scratch_bytes": self._scratch_buf.handle.nbytes if self._scratch_buf else 0,
        }

    def reset_peak(self) -> None:
        self.peak_bytes = self.live_bytes
        self.held_peak_bytes = self.live_bytes + self.pooled_bytes


def _native_gpu():
    # the wgpu-backed adapter is loaded only when no GPU object is handed in, so the
    # browser (which passes its own) never imports wgpu
    import importlib

    return importlib.import_module("scellis.devices.native_wgpu").NativeGPU


def _check_workgroup_memory(code: str, limits: dict, op: str | None) -> None:
    """Refuse a kernel whose workgroup memory passes the device's limit (some drivers
    compile it anyway and fault on the GPU)."""
    need, limit = workgroup_bytes(code), limits["max_compute_workgroup_storage_size"]
    if need > limit:
        raise LimitError(
            f"a kernel{f' of {op!r}' if op else ''} needs {need} bytes of workgroup memory, "
            f"over this device's maxComputeWorkgroupStorageSize of {limit}"
        )


LABEL_OPERANDS = 4  # an update over every parameter would otherwise name them all


def shape_label(op: str, inputs: list[View]) -> str:
    """``op`` with its operands' shapes, a transposed view marked ``T`` (``matmul
    384x8192T 8192x1152``), for a profile that tells one layer's products from another's."""
    shown = [_shape_text(v) for v in inputs[:LABEL_OPERANDS]]
    more = len(inputs) - LABEL_OPERANDS
    return " ".join([op, *shown, *([f"+{more} more"] if more > 0 else [])])


def _shape_text(v: View) -> str:
    text = "x".join(map(str, v.shape)) or "()"
    transposed = len(v.shape) >= 2 and v.strides[-2] == 1 and v.strides[-1] != 1
    return text + "T" if transposed else text
