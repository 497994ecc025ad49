"""Device limits and memory budgets with their sources (ir layer).

The compiler and the planner read limits from one of: the machine's WebGPU adapter
(through ``devices.adapters``), or a declared profile. Every number carries the place
it came from, so a plan can say why it believes a device holds what it holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.errors import ScellisError

# the WebGPU specification's default limits: what every conforming adapter offers
# (and all a browser page gets unless it asks for more)
SPEC_DEFAULTS = {
    "max_storage_buffer_binding_size": 128 << 20,
    "max_buffer_size": 256 << 20,
    "max_compute_workgroup_storage_size": 16384,
    "max_compute_invocations_per_workgroup": 256,
    "max_compute_workgroups_per_dimension": 65535,
    "max_storage_buffers_per_shader_stage": 8,
    "min_storage_buffer_offset_alignment": 256,
    "max_compute_workgroup_size_x": 256,
}

GiB = 1 << 30

# declared profiles: limits and a budget for devices the host cannot measure
PROFILES = {
    "webgpu-spec": ("the WebGPU spec's default limits", SPEC_DEFAULTS, 2 * GiB),
    "browser": ("a browser tab on default limits (declared: 2 GiB)", SPEC_DEFAULTS, 2 * GiB),
}


@dataclass(frozen=True)
class Target:
    """What a plan or a compile is for: the device kind, its limits, a budget."""

    device: str  # webgpu | reference | null
    limits: dict
    limits_source: str
    budget: int
    budget_source: str
    has_f16: bool = False
    adapter: str = ""
    # a CPU-emulated adapter: some kernels pick a variant by it, and the rung must match
    software: bool = False

    def record(self) -> dict:
        return {
            "device": self.device,
            "adapter": self.adapter,
            "limits": dict(self.limits),
            "limits_source": self.limits_source,
            "budget": self.budget,
            "budget_source": self.budget_source,
            "shader_f16": self.has_f16,
        }


@dataclass(frozen=True)
class Budget:
    """A memory budget with the words that say where it came from (a plan shows them)."""

    bytes: int
    source: str


def _given(budget: str | int | Budget | None) -> tuple[int, str] | None:
    """A budget passed in: text (``--budget 8GiB``), bytes, or a ``Budget`` with its source."""
    if budget is None:
        return None
    if isinstance(budget, Budget):
        return budget.bytes, budget.source
    return (parse_bytes(budget) if isinstance(budget, str) else int(budget)), "--budget"


def parse_bytes(text: str) -> int:
    """``4GiB``, ``512MiB``, ``1.5GB``, ``1000000`` -> bytes."""
    s = str(text).strip().replace(" ", "")
    units = {
        "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
        "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "b": 1, "": 1,
    }  # fmt: skip
    low = s.lower()
    for unit in sorted(units, key=len, reverse=True):
        if low.endswith(unit):
            num = low[: len(low) - len(unit)] if unit else low
            try:
                value = float(num)
            except ValueError:
                break
            if value <= 0:
                raise ScellisError(f"a budget must be positive, got {text!r}")
            return int(value * units[unit])
    raise ScellisError(f"cannot read {text!r} as a size; write e.g. 4GiB, 512MiB or 1e9")


def human(n: int | float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


def _host_memory() -> tuple[int, str] | None:
    """Available host memory where the host says (Linux); None elsewhere (browser)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "/proc/meminfo MemAvailable"
    except OSError:
        return None
    return None


def resolve(device: str = "webgpu", budget: str | int | Budget | None = None,
            adapters=None) -> Target:  # fmt: skip
    """The target for ``device`` (webgpu, reference, null, or a profile name).

    ``adapters`` is ``devices.adapters.list_adapters`` (or a stand-in); the first
    adapter's limits are used for webgpu. A budget given here wins over detection.
    """
    given = _given(budget)
    if device in PROFILES:
        what, limits, declared = PROFILES[device]
        b, bsrc = given or (declared, f"declared profile {device!r}: {what}")
        return Target("webgpu", dict(limits), f"declared profile {device!r}: {what}", b, bsrc)
    if device == "reference":
        host = _host_memory()
        b, bsrc = given or host or (4 * GiB, "declared: 4 GiB (host memory unknown)")
        return Target("reference", {}, "reference device: NumPy, no binding limits", b, bsrc)
    if device == "null":
        b, bsrc = given or (PROFILES["webgpu-spec"][2], "declared profile 'webgpu-spec'")
        return Target("webgpu", dict(SPEC_DEFAULTS), "the WebGPU spec's default limits", b, bsrc)
    if device != "webgpu":
        known = ", ".join(["webgpu", "reference", "null", *PROFILES])
        raise ScellisError(f"unknown device {device!r}; known: {known}")
    if adapters is None:
        raise ScellisError("no adapter list given for device webgpu")
    found = adapters()
    if not found:
        raise ScellisError("no WebGPU adapter found; plan for a profile with --device browser")
    a = found[0]
    limits = {**SPEC_DEFAULTS, **{k: int(v) for k, v in a["limits"].items()}}
    src = f"wgpu adapter {a['name']!r} ({a['backend']}, {a['adapter_type']})"
    if given is None:
        # WebGPU does not report memory sizes; a CPU adapter shares the host's memory
        host = _host_memory() if str(a["adapter_type"]).lower() == "cpu" else None
        if host is not None:
            given = (host[0], f"{host[1]} (the adapter {a['name']!r} is a CPU device)")
        else:
            given = (4 * GiB, "declared: 4 GiB (WebGPU does not report memory; pass --budget)")
    return Target("webgpu", limits, src, given[0], given[1], bool(a.get("shader_f16")), a["name"])


def of_backend(backend, budget: str | int | Budget | None = None) -> Target:
    """The target of an opened WebGPU backend: exactly the limits its kernels use."""
    info = backend.info
    limits = {**SPEC_DEFAULTS, **backend.limits}
    src = f"wgpu adapter {info.name!r} ({info.backend}, {info.adapter_type})"
    given = _given(budget)
    if given is not None:
        b, bsrc = given
    else:
        host = _host_memory() if str(info.adapter_type).lower() == "cpu" else None
        b, bsrc = host or (4 * GiB, "declared: 4 GiB (WebGPU does not report memory)")
    return Target("webgpu", limits, src, b, bsrc, info.has_f16, info.name,
                  software=bool(getattr(info, "software", False)))  # fmt: skip


def target_of_device(backend, budget: str | int | Budget | None = None) -> Target:
    """The target of an opened device: its own limits (WebGPU) or the host's (reference)."""
    if getattr(backend, "name", "") == "webgpu":
        return of_backend(backend, budget)
    return resolve("reference" if backend.name == "reference" else "null", budget)
