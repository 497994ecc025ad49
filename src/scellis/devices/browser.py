"""Browser GPU adapter (devices layer) on ``navigator.gpu``; the one js/pyodide importer.

It runs inside the engine's Web Worker, in Pyodide, and implements the same ``GPU``
protocol as ``devices.native_wgpu`` (buffers, pipelines, dispatches, async reads), so
the WebGPU backend and every WGSL kernel run unchanged. ``await install()`` opens the
adapter (WebGPU's set-up is asynchronous in a browser) and registers the ``webgpu``
device name to use it.

Errors: WebGPU reports validation and out-of-memory errors through error scopes whose
results arrive as promises, while ``create_pipeline`` and ``dispatch`` are synchronous.
So every pipeline compile pops its own scope into a pending list, and the work between
two readbacks runs inside one open scope pair; ``read_buffer`` (the next point where
the host waits anyway) awaits them all and raises the first error as a DeviceError,
with the WGSL source and compiler messages for a shader that failed.

Pipelines compile asynchronously (``createComputePipelineAsync``): the browser then
compiles them on its own threads, all at once, each sent to its GPU process as soon as
it is asked for, instead of one after another in the order a step first meets them. A
dispatch whose pipeline the host has not yet seen compiled is kept in order with the
work after it (dispatches, buffer writes as copies from staging buffers, buffer
releases) and encoded once its pipeline is: a readback first awaits every pipeline
still compiling, in order, and sends each stretch of kept work to the GPU as soon as its
pipelines are ready. So a cold step's compiles overlap each other, the engine's own
Python and the GPU's work, and the device never sees a pipeline before it exists.
"""

from __future__ import annotations

import js
from pyodide.ffi import JsException, to_js

from ..base.errors import DeviceError
from .base import register_device
from .webgpu.backend import WebGPUBackend
from .webgpu.gpu import (
    LIMIT_NAMES,
    UPLOAD_SUBMIT_BYTES,
    AdapterInfo,
    BindGroupCache,
    UploadPacer,
    subgroup_features,
)

NO_WEBGPU = (
    "This browser gives the page no WebGPU (navigator.gpu is missing in a Web Worker). "
    "Scellis trains on WebGPU: use a recent Chrome, Edge or Firefox with WebGPU enabled "
    "(Chrome/Edge 113+; on Linux start Chromium with --enable-unsafe-webgpu), served "
    "from https or localhost."
)
NO_ADAPTER = (
    "WebGPU is present but navigator.gpu.requestAdapter() found no GPU adapter "
    "(the GPU may be blocklisted or disabled; check chrome://gpu)."
)


def _absent(v) -> bool:
    """JS null/undefined: Pyodide gives None or its ``jsnull`` object, by version."""
    return v is None or type(v).__name__ in ("JsNull", "JsUndefined")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _obj(d: dict):
    """A plain JS object from a dict (JS objects inside it pass through as they are)."""
    return to_js(d, dict_converter=js.Object.fromEntries)


def _bytes_js(data: bytes, size: int):
    if len(data) < size:
        data = bytes(data) + bytes(size - len(data))
    return to_js(memoryview(data))


class _Pipeline:
    """A compute pipeline being compiled: ``gpu`` is the GPUComputePipeline once the host
    has awaited ``promise``."""

    __slots__ = ("gpu", "promise", "code", "error", "desc")

    def __init__(self, promise, code: str, desc):
        self.gpu, self.promise, self.code, self.error = None, promise, code, None
        self.desc = desc  # what the compile was asked for: see BrowserGPU._send_kept_now

    def failed(self) -> DeviceError:
        return DeviceError(
            f"WGSL pipeline failed to compile: {self.error}\n--- source ---\n{self.code}"
        )


class _Group:
    """A bind group's bindings; the GPUBindGroup is made when first encoded (its layout
    comes from the pipeline, which may still be compiling when the group is asked for)."""

    __slots__ = ("bindings", "gpu")

    def __init__(self, bindings):
        self.bindings, self.gpu = list(bindings), None


class BrowserGPU(BindGroupCache):
    """A GPUDevice opened in this worker, with one open command encoder for batching."""

    def __init__(self, adapter, device, info: AdapterInfo):
        self._adapter, self._device, self.info = adapter, device, info
        self.limits = dict(info.limits)
        self._queue = device.queue
        self._encoder = None
        self._pass = None
        self.encoded = 0
        self.submissions = 0
        self._uploads = UploadPacer(lambda: self._queue.submit(self._no_work))
        self._init_groups()
        self._pending: list = []  # (error-scope promise, what it guards, WGSL source)
        self._lost = None
        self._usage = js.GPUBufferUsage.STORAGE | js.GPUBufferUsage.COPY_SRC
        self._usage |= js.GPUBufferUsage.COPY_DST
        self._readback = js.GPUBufferUsage.MAP_READ | js.GPUBufferUsage.COPY_DST
        self._compiling: list[_Pipeline] = []  # created, not yet awaited
        self._no_work = to_js([])
        # each pipeline's compile, (JS object {start, done}, WGSL): see compile_times
        self._compiles: list = []
        # kept work, in order: ("d", pipeline, group, grid) | ("w", staging, buf, offset, size)
        self._deferred: list = []
        self._released: list = []  # buffers to destroy once the kept work is submitted
        # bytes the kept work holds on the GPU (write staging, released buffers), its
        # high-water mark, and the most it may hold before it is sent on regardless
        self.kept_bytes = 0
        self.kept_bytes_peak = 0
        self.kept_bytes_max = UPLOAD_SUBMIT_BYTES
        self._replaying_kept = False
        self._open_scopes()

    def _open_scopes(self) -> None:
        self._device.pushErrorScope("out-of-memory")
        self._device.pushErrorScope("validation")

    def _close_scopes(self) -> None:
        # LIFO: validation was pushed last
        self._pending.append((self._device.popErrorScope(), "GPU work", None))
        self._pending.append((self._device.popErrorScope(), "GPU memory", None))

    async def check(self) -> None:
        """Raise the first WebGPU error reported since the last check, as a DeviceError."""
        await self._settle()
        await self._check_scopes()

    async def _settle(self) -> None:
        """Await the pipelines still compiling, then encode the work kept behind them
        (again while awaiting let other work in: a readback must follow all of it)."""
        while self._compiling or self._deferred:
            # the kept work's own pipelines too: another readback may be awaiting them
            # (commands run concurrently in the worker), and this one must not spin
            kept = [item[1] for item in self._deferred if item[0] == "d" and item[1].gpu is None]
            waiting = list(dict.fromkeys(self._compiling + kept))
            self._compiling = []
            failed = None
            for p in waiting:  # in the order the work first met them
                try:
                    compiled = await p.promise
                    # one compiled early (_send_kept_now) stays: bind groups made from
                    # its "auto" layout fit no other pipeline
                    p.gpu = compiled if p.gpu is None else p.gpu
                except JsException as e:
                    p.error = str(e)
                    failed = failed or p
                if failed is None:
                    # the work up to the next pipeline still compiling goes to the GPU
                    # now, so it runs (and the host encodes) while the rest compile
                    self._encode_deferred()
            if failed is not None:
                self._drop_deferred()
                await self._check_scopes()  # a shader module's error carries the compiler log
                raise failed.failed()
            self._encode_deferred()

    def _encode_deferred(self) -> None:
        """Encode the kept work up to the first dispatch whose pipeline is still compiling."""
        work, self._deferred = self._deferred, []
        # a buffer released meanwhile may still be used further on: none is destroyed
        # until all of the kept work is submitted
        self._replaying_kept = True
        for i, item in enumerate(work):
            if item[0] == "d":
                if item[1].gpu is None:
                    self._deferred = work[i:] + self._deferred
                    break
                self._encode(*item[1:])
            else:
                _, staging, buf, offset, size = item
                self._end_pass()
                if self._encoder is None:
                    self._encoder = self._device.createCommandEncoder()
                self._encoder.copyBufferToBuffer(staging, 0, buf, offset, size)
                self._released.append(staging)
        self._replaying_kept = False
        self.flush()

    def _drop_deferred(self) -> None:
        for item in self._deferred:
            if item[0] == "w":
                item[1].destroy()
        self._deferred = []
        self._release()

    def _release(self) -> None:
        released, self._released = self._released, []
        for buf in released:
            buf.destroy()
        self.kept_bytes = 0  # the last kept write's staging is among them

    def _kept(self, nbytes: int) -> None:
        """Count ``nbytes`` more held by the kept work; past ``kept_bytes_max``, send it on."""
        self.kept_bytes += nbytes
        self.kept_bytes_peak = max(self.kept_bytes_peak, self.kept_bytes)
        if self.kept_bytes >= self.kept_bytes_max:
            self._send_kept_now()

    def _send_kept_now(self) -> None:
        """Encode and submit all the kept work now, compiling the pipelines it still waits
        for synchronously, so that its staging and released buffers go back to the GPU.

        A model's load is one synchronous stretch of Python: its first dispatch of a new
        kernel (a widening, a quantiser) is kept until the next readback, and so is every
        upload after it, each in a staging buffer of its own. Left alone, a 1.1B model's
        load held its whole float16 folder a second time, 2.3 GB of the card. The
        asynchronous compiles go on and still report their errors at the next readback."""
        for item in self._deferred:
            p = item[1]
            if item[0] == "d" and p.gpu is None:
                if p.error is not None:
                    return  # it failed to compile: the next readback says so
                p.gpu = self._device.createComputePipeline(p.desc)
        self._encode_deferred()

    async def _check_scopes(self) -> None:
        self._close_scopes()
        pending, self._pending = self._pending, []
        self._open_scopes()
        first = None
        for promise, what, code in pending:
            try:
                err = await promise
            except JsException as e:
                # the scope itself failed (the GPU process went away, e.g. after a shader
                # compile that never ended): say what it guarded rather than a JS error
                if first is None:
                    first = (what, f"no answer from the device ({e})", code)
                continue
            if not _absent(err) and first is None:
                first = (what, str(err.message), code)
        if self._lost is not None:
            raise DeviceError(f"the WebGPU device was lost: {self._lost}")
        if first is not None:
            what, message, code = first
            if code is not None:
                raise DeviceError(
                    f"WGSL pipeline failed to compile: {message}\n--- source ---\n{code}"
                )
            raise DeviceError(f"WebGPU rejected the {what}: {message}")

    # -- buffers --
    def create_buffer(self, size: int, *, storage: bool = True, data: bytes | None = None):
        size = max(4, (size + 3) // 4 * 4)
        if data is None:
            return self._device.createBuffer(_obj({"size": size, "usage": self._usage}))
        buf = self._device.createBuffer(
            _obj({"size": size, "usage": self._usage, "mappedAtCreation": True})
        )
        js.Uint8Array.new(buf.getMappedRange()).set(_bytes_js(data, size))
        buf.unmap()
        self._uploads.wrote(size)  # staged and copied as a queued write is
        return buf

    def destroy_buffer(self, buf) -> None:
        self._groups.clear()  # a cached bind group may hold this buffer
        if self._deferred:  # work not encoded yet may use it
            self._released.append(buf)
            self._kept(int(buf.size))
        else:
            buf.destroy()

    def write_buffer(self, buf, offset: int, data: bytes) -> None:
        size = (len(data) + 3) // 4 * 4
        if self._deferred:  # in order with the work kept: a copy from a staging buffer
            staging = self.create_buffer(size, data=data)
            self._deferred.append(("w", staging, buf, offset, size))
            self._kept(size)
            return
        # queue writes run before commands not yet submitted: submit those first
        self.flush()
        self._queue.writeBuffer(buf, offset, _bytes_js(data, size))
        self._uploads.wrote(size)

    def write_unread(self, buf, offset: int, data: bytes) -> None:
        if self._deferred:  # the kept work is not submitted: stay in order with it
            self.write_buffer(buf, offset, data)
            return
        size = (len(data) + 3) // 4 * 4
        self._queue.writeBuffer(buf, offset, _bytes_js(data, size))
        self._uploads.wrote(size)

    async def read_buffer(self, buf, offset: int, size: int) -> bytes:
        await self._settle()
        size4 = max(4, (size + 3) // 4 * 4)
        staging = self._device.createBuffer(_obj({"size": size4, "usage": self._readback}))
        self._end_pass()
        enc = self._encoder or self._device.createCommandEncoder()
        enc.copyBufferToBuffer(buf, offset, staging, 0, size4)
        self._queue.submit(to_js([enc.finish()]))
        self._encoder = None
        self.encoded = 0
        self._release()
        self._uploads.submitted()
        self.submissions += 1
        await self.check()
        await staging.mapAsync(js.GPUMapMode.READ)
        data = js.Uint8Array.new(staging.getMappedRange()).to_bytes()[:size]
        staging.unmap()
        staging.destroy()
        return data

    # -- pipelines and dispatch --
    def create_pipeline(self, code: str, entry: str = "main"):
        self._device.pushErrorScope("validation")
        module = self._device.createShaderModule(_obj({"code": code}))
        self._pending.append((self._device.popErrorScope(), "pipeline", code))
        desc = _obj({"layout": "auto", "compute": _obj({"module": module, "entryPoint": entry})})
        compile = _stamped()(self._device.createComputePipelineAsync(desc))
        self._compiles.append((compile, code))
        p = _Pipeline(compile.promise, code, desc)
        self._compiling.append(p)
        # The browser sends WebGPU calls to its GPU process in batches, at the end of the
        # worker's current task or on a submit; a step's Python is one long task, so its
        # compiles would only start once it ends. An empty submit sends them now, and the
        # GPU process compiles while the step's Python goes on.
        self._queue.submit(self._no_work)
        self._uploads.submitted()
        return p

    def now_ms(self) -> float:
        """The worker's clock (``performance.now()``), which ``compile_times`` uses."""
        return float(js.performance.now())

    def compile_times(self) -> list[tuple[float, float | None, str]]:
        """(start, done, WGSL) of every pipeline compile so far, in the order asked for:
        ms on the worker's clock, ``done`` None while it compiles (for the benchmarks:
        when a cold step's compiles end)."""
        return [
            (float(s.start), None if _absent(s.done) else float(s.done), code)
            for s, code in self._compiles
        ]

    def bind_group(self, pipeline, bindings):
        """A bind group of ``bindings`` for ``pipeline``, made when first encoded and not
        cached here (a replayed schedule holds its own)."""
        return _Group(bindings)

    def _make_group(self, pipeline: _Pipeline, group: _Group):
        entries = [
            _obj({"binding": i, "resource": _obj({"buffer": b, "offset": o, "size": s})})
            for i, (b, o, s) in enumerate(group.bindings)
        ]
        return self._device.createBindGroup(
            _obj({"layout": pipeline.gpu.getBindGroupLayout(0), "entries": to_js(entries)})
        )

    def dispatch_group(self, pipeline, group, grid) -> None:
        """Encode one dispatch with a prepared bind group (kept for later, in order, while
        its pipeline or earlier kept work waits)."""
        if pipeline.error is not None:
            raise pipeline.failed()
        if self._deferred or pipeline.gpu is None:
            self._deferred.append(("d", pipeline, group, tuple(grid)))
            return
        self._encode(pipeline, group, grid)

    def dispatch_run(self, run) -> None:
        """Encode a replayed schedule's stretch of dispatches (a ``DispatchRun``) with one
        call into JavaScript: per dispatch, three calls across Pyodide's bridge cost more
        than the GPU's own work on small kernels. Work kept behind a compiling pipeline
        keeps the stretch in order, one dispatch at a time."""
        if run.prepared is None and not self._deferred:
            run.prepared = self._prepare_run(run.items)
        if self._deferred or run.prepared is None:
            for _, pipeline, group, grid in run.items:
                self.dispatch_group(pipeline, group, grid)
            return
        self._end_pass()
        if self._encoder is None:
            self._encoder = self._device.createCommandEncoder()
        _encode_run()(self._encoder, *run.prepared)
        self.encoded += len(run.items)
        if self.encoded >= 512:  # keep command buffers bounded
            self.flush()

    def _prepare_run(self, items: list):
        """(pipelines, bind groups, grids) of ``items`` as JavaScript arrays, or None while
        a pipeline is not compiled (the stretch then goes one dispatch at a time)."""
        if any(it[1].gpu is None or it[1].error is not None for it in items):
            return None
        for _, pipeline, group, _ in items:
            if group.gpu is None:
                group.gpu = self._make_group(pipeline, group)
        pipes = to_js([it[1].gpu for it in items])
        groups = to_js([it[2].gpu for it in items])
        grids = js.Uint32Array.new(to_js([int(n) for it in items for n in it[3]]))
        return pipes, groups, grids

    def _encode(self, pipeline: _Pipeline, group: _Group, grid) -> None:
        if group.gpu is None:
            group.gpu = self._make_group(pipeline, group)
        if self._pass is None:
            if self._encoder is None:
                self._encoder = self._device.createCommandEncoder()
            self._pass = self._encoder.beginComputePass()
        self._pass.setPipeline(pipeline.gpu)
        self._pass.setBindGroup(0, group.gpu)
        self._pass.dispatchWorkgroups(*grid)
        self.encoded += 1
        if self.encoded >= 512:  # keep command buffers bounded
            self.flush()

    def _end_pass(self) -> None:
        if self._pass is not None:
            self._pass.end()
            self._pass = None

    def flush(self) -> None:
        """Submit what is encoded (work kept behind a compiling pipeline waits for the
        next readback)."""
        self._end_pass()
        if self._encoder is not None:
            self._queue.submit(to_js([self._encoder.finish()]))
            self._encoder = None
            self._uploads.submitted()
            # the kept work, not encoded yet, is not in this submission
            self.submissions += not self._deferred
        self.encoded = 0
        if not self._deferred and not self._replaying_kept:
            self._release()


_ENCODE_RUN = None
_STAMPED = None


def _encode_run():
    """The JavaScript function encoding a stretch of dispatches into one compute pass of
    an encoder (made once: a worker without it never needs the browser's Function)."""
    global _ENCODE_RUN
    if _ENCODE_RUN is None:
        _ENCODE_RUN = js.Function.new(
            "enc",
            "pipes",
            "groups",
            "grids",
            "const pass = enc.beginComputePass(); let last = null;"
            "for (let i = 0; i < pipes.length; i++) {"
            "  if (pipes[i] !== last) { pass.setPipeline(pipes[i]); last = pipes[i]; }"
            "  pass.setBindGroup(0, groups[i]);"
            "  pass.dispatchWorkgroups(grids[3 * i], grids[3 * i + 1], grids[3 * i + 2]);"
            "}"
            "pass.end();",
        )
    return _ENCODE_RUN


def _stamped():
    """The JavaScript function that wraps a compile's promise as ``{start, promise, done}``
    (ms, the worker's clock): ``done`` is stamped on the browser's side as the promise
    resolves, where Python would only see it at its next await."""
    global _STAMPED
    if _STAMPED is None:
        _STAMPED = js.Function.new(
            "promise",
            "const s = {start: performance.now(), done: null};"
            "s.promise = promise.then((v) => { s.done = performance.now(); return v; });"
            "return s;",
        )
    return _STAMPED


def _adapter_info(adapter) -> AdapterInfo:
    info = getattr(adapter, "info", None)
    info = None if _absent(info) else info
    get = lambda k: str(getattr(info, k, "") or "") if info is not None else ""
    limits = {}
    for name in LIMIT_NAMES:
        v = getattr(adapter.limits, _camel(name), None)
        if not _absent(v):
            limits[name] = int(v)
    features = sorted(str(f) for f in js.Array.from_(adapter.features).to_py())
    return AdapterInfo(
        name=get("device") or get("architecture") or get("description"),
        vendor=get("vendor"),
        backend="browser",
        adapter_type="fallback" if getattr(info, "isFallbackAdapter", False) else "",
        description=get("description"),
        limits=limits,
        features=features,
        extra={"architecture": get("architecture"), **_matrix_configs(info)},
    )


def _matrix_configs(info) -> dict:
    """The adapter's subgroup-matrix configurations (Chromium's experimental feature), in
    native_wgpu's form; the tab states one subgroup size range for all of them."""
    listed = getattr(info, "subgroupMatrixConfigs", None) if info is not None else None
    if _absent(listed):
        return {}
    lo, hi = (int(getattr(info, k, 0) or 0) for k in ("subgroupMinSize", "subgroupMaxSize"))
    configs = [
        {"component_type": str(c.componentType), "m": int(c.M), "n": int(c.N),
         "result_component_type": str(c.resultComponentType), "k": int(c.K),
         "min_subgroup_size": lo, "max_subgroup_size": hi}
        for c in js.Array.from_(listed)
    ]  # fmt: skip
    return {"subgroup_matrix_configs": configs}


def device_descriptor(info: AdapterInfo):
    """What the device is asked for: shader-f16 and subgroups where the adapter has them,
    and the adapter's limits (the worker asks for the same before Python starts, see
    web/worker.js)."""
    # (not the subgroup matrices yet: their kernel has run on a GPU natively, on Dawn, but
    # not in a tab; the device the worker opened is taken as it is)
    wanted = ("shader-f16", *subgroup_features(info.features))
    feats = [f for f in wanted if f in info.features]
    limits = {
        _camel(k): v for k, v in info.limits.items() if k != "min_storage_buffer_offset_alignment"
    }
    return _obj({"requiredFeatures": to_js(feats), "requiredLimits": _obj(limits)})


async def open_gpu(adapter=None, device=None) -> BrowserGPU:
    """Open the browser's WebGPU adapter and device (DeviceError naming what is missing);
    an ``adapter`` and ``device`` the worker already opened are taken as they are."""
    if _absent(adapter):
        gpu = getattr(js.navigator, "gpu", None)
        if _absent(gpu):
            raise DeviceError(NO_WEBGPU)
        adapter = await gpu.requestAdapter(_obj({"powerPreference": "high-performance"}))
        if _absent(adapter):
            raise DeviceError(NO_ADAPTER)
    info = _adapter_info(adapter)
    if _absent(device):
        device = await adapter.requestDevice(device_descriptor(info))
    info.device_features = sorted(str(f) for f in js.Array.from_(device.features).to_py())
    out = BrowserGPU(adapter, device, info)

    def lost(reason):
        out._lost = f"{reason.reason}: {reason.message}"

    device.lost.then(lost)
    return out


_GPU: BrowserGPU | None = None


class BrowserBackend(WebGPUBackend):
    """The WebGPU backend on the worker's opened device (``await install()`` first)."""

    def __init__(self, limits: dict | None = None):
        if _GPU is None:
            raise DeviceError(
                "the browser GPU is not open yet: await scellis.devices.browser.install()"
            )
        super().__init__(gpu=_GPU, limits=limits)


async def install(adapter=None, device=None) -> BrowserGPU:
    """Open WebGPU in this worker (or take the ``adapter`` and ``device`` it opened while
    Python was loading) and make ``get_device("webgpu")`` use it."""
    global _GPU
    if _GPU is None:
        _GPU = await open_gpu(adapter, device)
    register_device("webgpu", "scellis.devices.browser:BrowserBackend")
    return _GPU
