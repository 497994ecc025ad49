"""Native GPU adapter (devices layer) on wgpu-py: the only module that imports wgpu.

Adapter choice: high-performance by default; ``SCELLIS_ADAPTER`` (or the ``adapter``
argument) picks by a case-insensitive substring of the adapter's name, vendor or
backend, e.g. ``llvmpipe`` or ``vulkan``.
"""

from __future__ import annotations

import os

import wgpu

from ..base.errors import DeviceError
from .gpu_timing import DispatchTimer
from .webgpu.gpu import LIMIT_NAMES, AdapterInfo, BindGroupCache

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_READBACK = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
_RESOLVE = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC


def _info(adapter) -> AdapterInfo:
    i = adapter.info
    limits = {k.replace("-", "_"): int(v) for k, v in adapter.limits.items()}
    return AdapterInfo(
        name=i.get("device", ""),
        vendor=i.get("vendor", ""),
        backend=i.get("backend_type", ""),
        adapter_type=i.get("adapter_type", ""),
        description=i.get("description", ""),
        limits={k: limits[k] for k in LIMIT_NAMES if k in limits},
        features=sorted(str(f) for f in adapter.features),
    )


def list_adapters() -> list[AdapterInfo]:
    return [_info(a) for a in wgpu.gpu.enumerate_adapters_sync()]


def _matches(info: AdapterInfo, want: str) -> bool:
    want = want.lower()
    return any(
        want in s.lower()
        for s in (info.name, info.vendor, info.backend, info.adapter_type, info.description)
    )


def choose_adapter(want: str | None = None):
    want = want if want is not None else os.environ.get("SCELLIS_ADAPTER")
    if want:
        adapters = wgpu.gpu.enumerate_adapters_sync()
        for a in adapters:
            if _matches(_info(a), want):
                return a
        names = ", ".join(f"{x.name} ({x.backend})" for x in map(_info, adapters)) or "none"
        raise DeviceError(f"no WebGPU adapter matches {want!r}; found: {names}")
    # Vulkan/Metal/D3D12 first: the GL fallback lacks compute features we rely on
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        raise DeviceError(
            "no WebGPU adapter found (install a GPU driver, or Mesa's "
            "lavapipe: apt-get install mesa-vulkan-drivers)"
        )
    return adapter


class NativeGPU(BindGroupCache):
    """A device opened on one adapter, with one open command encoder for batching."""

    def __init__(self, adapter: str | None = None):
        self._adapter = choose_adapter(adapter)
        self.info = _info(self._adapter)
        # timestamp queries only serve `scellis profile`; asking for them changes no result
        feats = [f for f in ("shader-f16", "timestamp-query") if f in self.info.features]
        self._device = self._adapter.request_device_sync(
            required_features=feats,
            required_limits={
                k.replace("_", "-"): v
                for k, v in self.info.limits.items()
                if k != "min_storage_buffer_offset_alignment"
            },
        )
        self.limits = dict(self.info.limits)
        self._queue = self._device.queue
        self._encoder = None
        self._pass = None
        self.encoded = 0  # dispatches encoded since the last flush
        self.timer: DispatchTimer | None = None  # per-dispatch GPU times, while profiling
        self.label = ""  # what the next dispatch is (the op), for the timer
        # bind groups by (pipeline, bound ranges); pooled buffers make these repeat.
        # Entries hold their buffers, so an id in a key is never reused while cached.
        self._init_groups()

    # -- buffers --
    def create_buffer(self, size: int, *, storage: bool = True, data: bytes | None = None):
        size = max(4, (size + 3) // 4 * 4)
        if data is not None:
            if len(data) < size:
                data = bytes(data) + bytes(size - len(data))
            return self._device.create_buffer_with_data(data=data, usage=_STORAGE)
        return self._device.create_buffer(size=size, usage=_STORAGE)

    def destroy_buffer(self, buf) -> None:
        self._groups.clear()  # rare (pool emptied, meta evicted): drop every cached group
        buf.destroy()

    def write_buffer(self, buf, offset: int, data: bytes) -> None:
        # queue writes run before unsubmitted commands: submit those first
        self.flush()
        pad = (-len(data)) % 4
        self._queue.write_buffer(buf, offset, bytes(data) + bytes(pad) if pad else data)

    async def read_buffer(self, buf, offset: int, size: int) -> bytes:
        size4 = max(4, (size + 3) // 4 * 4)
        staging = self._device.create_buffer(size=size4, usage=_READBACK)
        self._end_pass()
        enc = self._encoder or self._device.create_command_encoder()
        enc.copy_buffer_to_buffer(buf, offset, staging, 0, size4)
        self._queue.submit([enc.finish()])
        self._encoder = None
        self.encoded = 0
        promise = staging.map_async(wgpu.MapMode.READ)
        if hasattr(promise, "__await__"):
            await promise
        elif hasattr(promise, "sync_wait"):
            promise.sync_wait()
        data = bytes(staging.read_mapped())[:size]
        staging.unmap()
        staging.destroy()
        return data

    # -- pipelines and dispatch --
    def create_pipeline(self, code: str, entry: str = "main"):
        try:
            module = self._device.create_shader_module(code=code)
            return self._device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": entry}
            )
        except Exception as e:  # wgpu reports WGSL/validation errors as exceptions
            raise DeviceError(
                f"WGSL pipeline failed to compile: {e}\n--- source ---\n{code}"
            ) from None

    def bind_group(self, pipeline, bindings):
        """A bind group of ``bindings`` for ``pipeline``, made now and not cached here
        (a replayed schedule holds its own)."""
        layout = pipeline.get_bind_group_layout(0)
        entries = [
            {"binding": i, "resource": {"buffer": b, "offset": o, "size": s}}
            for i, (b, o, s) in enumerate(bindings)
        ]
        return self._device.create_bind_group(layout=layout, entries=entries)

    def dispatch_group(self, pipeline, group, grid) -> None:
        """Encode one dispatch with a prepared bind group."""
        if self.timer is not None:  # a pass of its own, stamped at its start and end
            self._end_pass()
            if self._encoder is None:
                self._encoder = self._device.create_command_encoder()
            self._pass = self.timer.pass_for(self._encoder, self.label)
        elif self._pass is None:
            if self._encoder is None:
                self._encoder = self._device.create_command_encoder()
            self._pass = self._encoder.begin_compute_pass()
        self._pass.set_pipeline(pipeline)
        self._pass.set_bind_group(0, group)
        self._pass.dispatch_workgroups(*grid)
        if self.timer is not None:
            self._end_pass()
        self.encoded += 1
        if self.encoded >= 512:  # keep command buffers bounded
            self.flush()

    def start_timing(self) -> None:
        """Time each dispatch from now on (``stop_timing`` reads the times)."""
        if "timestamp-query" not in self.info.features:
            raise DeviceError(f"the adapter {self.info.name!r} has no timestamp queries")
        self.flush()
        self.timer = DispatchTimer(self._device, _RESOLVE)

    async def stop_timing(self) -> list[tuple[str, float]]:
        """(label, GPU seconds) of each dispatch since ``start_timing``."""
        timer, self.timer = self.timer, None
        self.flush()
        return await timer.read(self) if timer is not None else []

    def _end_pass(self) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = None

    def flush(self) -> None:
        self._end_pass()
        if self._encoder is not None:
            self._queue.submit([self._encoder.finish()])
            self._encoder = None
        self.encoded = 0
