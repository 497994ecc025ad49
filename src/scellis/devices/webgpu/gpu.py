"""The GPU adapter protocol (devices layer): the slice of WebGPU the backend uses.

Two implementations: ``devices.native_wgpu`` (wgpu-py, the only file that imports
wgpu) and, in the browser, one over Pyodide's ``js`` FFI. Nothing above this protocol
touches either.
Buffers here are opaque handles; sizes and offsets are in bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

# the limits the backend reads, by their WebGPU names
LIMIT_NAMES = (
    "max_storage_buffer_binding_size",
    "max_buffer_size",
    "max_compute_workgroup_storage_size",
    "max_compute_invocations_per_workgroup",
    "max_compute_workgroups_per_dimension",
    "max_storage_buffers_per_shader_stage",
    "min_storage_buffer_offset_alignment",
    "max_compute_workgroup_size_x",
)


@dataclass
class AdapterInfo:
    name: str
    vendor: str
    backend: str
    adapter_type: str
    limits: dict[str, int]
    features: list[str]
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # the features the opened device was given (a subset of ``features``); empty until
    # a device is opened on the adapter
    device_features: list[str] = field(default_factory=list)

    @property
    def has_f16(self) -> bool:
        return "shader-f16" in self.features

    @property
    def software(self) -> bool:
        """A GPU emulated on the CPU (lavapipe/llvmpipe, SwiftShader, a browser's fallback
        adapter): kernels tuned for a real GPU's parallelism may lose there."""
        names = f"{self.name} {self.vendor} {self.description}".lower()
        return self.adapter_type.lower() in ("cpu", "fallback") or any(
            s in names for s in ("llvmpipe", "lavapipe", "swiftshader"))  # fmt: skip

    @property
    def has_subgroups(self) -> bool:
        return bool(subgroup_features(self.features))

    @property
    def subgroups_on(self) -> bool:
        """Whether the opened device has subgroup operations enabled."""
        return bool(subgroup_features(self.device_features))


# WebGPU names the feature ``subgroups``; wgpu-native calls it ``subgroup``
SUBGROUP_NAMES = ("subgroups", "subgroup")


def subgroup_features(features) -> list[str]:
    """The subgroup feature among ``features``, by the name its host gives it: what a
    device request lists so that kernels may use subgroup operations (none when the
    adapter lacks them: asking for an absent feature fails the request)."""
    return [f for f in SUBGROUP_NAMES if f in features]


class GPU(Protocol):
    """One opened device: buffers, pipelines, dispatches, submission, async reads."""

    info: AdapterInfo
    limits: dict[str, int]

    def create_buffer(self, size: int, *, storage: bool = True, data: bytes | None = None) -> Any:
        """A storage buffer of ``size`` bytes (filled with ``data`` when given)."""

    def destroy_buffer(self, buf: Any) -> None: ...

    def write_buffer(self, buf: Any, offset: int, data: bytes) -> None:
        """Queue a write; ordered after all work already submitted or encoded."""

    def write_unread(self, buf: Any, offset: int, data: bytes) -> None:
        """Queue a write into bytes that no encoded, unsubmitted command reads: it needs
        no submission first (a queue write runs before the next submission's commands,
        so it is write_buffer's only where nothing still encoded reads the range)."""

    # how many times everything encoded was submitted: work encoded while this reads n
    # has been submitted once it reads more
    submissions: int

    async def read_buffer(self, buf: Any, offset: int, size: int) -> bytes:
        """Bytes of ``buf`` after all encoded work has run."""

    def create_pipeline(self, code: str, entry: str = "main") -> Any:
        """Compile one WGSL compute shader; errors become DeviceError with the log."""

    def dispatch(
        self, pipeline: Any, bindings: list[tuple[Any, int, int]], grid: tuple[int, int, int]
    ) -> None:
        """Encode one dispatch; ``bindings[i]`` = (buffer, byte offset, byte size)."""

    def flush(self) -> None:
        """Submit everything encoded so far."""


UPLOAD_SUBMIT_BYTES = 64 << 20  # queued writes between empty submissions, at most


class UploadPacer:
    """Sends a run of queue writes with nothing submitted between them (a model's weights
    going up) on to the GPU every UPLOAD_SUBMIT_BYTES, by an empty submission. wgpu copies
    each written range into staging memory at once and frees it only after a submission
    that carries the copy has finished: loading a 1.1B-parameter model held a second copy
    of its weights until the first step (10.6 GB of the card at the peak, where the engine
    held 4.4 GiB; 6.1 GB paced). In a tab, writes kept behind a compiling pipeline have
    staging buffers of their own, bounded by the same figure (``BrowserGPU.kept_bytes``)."""

    def __init__(self, submit_empty):
        self._submit_empty = submit_empty
        self.unsubmitted = 0  # bytes written since the last submission

    def wrote(self, nbytes: int) -> None:
        self.unsubmitted += nbytes
        if self.unsubmitted >= UPLOAD_SUBMIT_BYTES:
            self.submitted()
            self._submit_empty()

    def submitted(self) -> None:
        """A submission went out (it carries every queued write)."""
        self.unsubmitted = 0


class BindGroupCache:
    """Bind groups reused by (pipeline, bindings): the dispatch path both GPU adapters share.

    The adapter provides ``bind_group(pipeline, bindings)`` and ``dispatch_group(pipeline,
    group, grid)``; ``_groups`` must be cleared when a cached buffer is destroyed.
    """

    GROUPS_MAX = 4096

    def _init_groups(self) -> None:
        self._groups: OrderedDict = OrderedDict()

    def dispatch(self, pipeline, bindings, grid) -> None:
        key = (id(pipeline), *[(id(b), o, s) for b, o, s in bindings])
        hit = self._groups.get(key)
        if hit is None:
            group = self.bind_group(pipeline, bindings)
            # the entry keeps its buffers alive, so an id in a key is never reused meanwhile
            self._groups[key] = (group, pipeline, [b for b, _, _ in bindings])
            if len(self._groups) > self.GROUPS_MAX:
                self._groups.popitem(last=False)
        else:
            group = hit[0]
            self._groups.move_to_end(key)
        self.dispatch_group(pipeline, group, grid)
