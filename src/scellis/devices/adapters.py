"""Adapter discovery (devices layer): what WebGPU adapters this machine offers.

wgpu is imported on first call only, so importing scellis never needs it.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict

from ..base.errors import DeviceError


def list_adapters() -> list[dict]:
    """Every adapter wgpu can see: name, vendor, backend, type, limits, features."""
    try:
        native = importlib.import_module("scellis.devices.native_wgpu")
    except ImportError as e:
        raise DeviceError(
            f"native WebGPU is not available here ({e}); `pip install scellis` installs wgpu "
            "on this platform (or pip install 'scellis[native]')"
        ) from None
    out = []
    for info in native.list_adapters():
        d = asdict(info)
        d["shader_f16"] = info.has_f16
        d["subgroups"] = info.has_subgroups
        out.append(d)
    return out
