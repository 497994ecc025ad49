"""The recurrent kernels a software adapter gets: ``step`` unless the variant is named,
and what counts as software (a CPU adapter, a browser's fallback, SwiftShader)."""

from __future__ import annotations

import pytest

from scellis.devices.webgpu.gpu import AdapterInfo
from scellis.devices.webgpu.kernels.recurrent import (
    DEFAULT_VARIANT,
    SOFTWARE_VARIANT,
    VARIANT_ENV,
    variant,
)

LIMITS = {"max_compute_invocations_per_workgroup": 256, "max_compute_workgroup_size_x": 256,
          "max_compute_workgroups_per_dimension": 65535,
          "max_compute_workgroup_storage_size": 32768}  # fmt: skip


@pytest.mark.parametrize(("kind", "name", "vendor", "software"), [
    ("CPU", "llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe", True),
    ("fallback", "", "google", True),
    ("", "swiftshader", "google", True),
    ("DiscreteGPU", "NVIDIA H100", "nvidia", False),
    ("", "ampere", "apple", False),
])  # fmt: skip
def test_software_adapters_are_told_apart(kind, name, vendor, software):
    info = AdapterInfo(name=name, vendor=vendor, backend="", adapter_type=kind, limits={},
                       features=[])  # fmt: skip
    assert info.software is software


def test_a_software_adapter_gets_the_step_kernels_unless_one_is_named(monkeypatch):
    monkeypatch.delenv(VARIANT_ENV, raising=False)
    assert SOFTWARE_VARIANT == "step" != DEFAULT_VARIANT
    assert variant(LIMITS, 4, software=True) == "step"
    assert variant(LIMITS, 4, software=False) == DEFAULT_VARIANT
    monkeypatch.setenv(VARIANT_ENV, "tiled")
    assert variant(LIMITS, 4, software=True) == "tiled"
