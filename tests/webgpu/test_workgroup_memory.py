"""The backend counts a kernel's workgroup memory and refuses one past the limit."""

from __future__ import annotations

import pytest

from scellis.base.errors import LimitError
from scellis.devices.webgpu.kernels.workgroup_memory import type_bytes, workgroup_bytes

pytestmark = pytest.mark.webgpu


@pytest.mark.parametrize(
    "ty,size",
    [("f32", 4), ("f16", 2), ("vec4<f32>", 16), ("vec3<f32>", 16), ("vec2<f16>", 4),
     ("array<f32, 16>", 64), ("array<vec4<f32>, 2048u>", 32768),
     ("array<array<f32, 3>, 5>", 60), ("mystery", 0)],
)  # fmt: skip
def test_type_sizes(ty, size):
    assert type_bytes(ty) == size


def test_a_kernel_declares_the_sum_of_its_workgroup_variables():
    code = (
        "var<workgroup> sh_a: array<vec4<f32>, 2048>;\n"
        "var<workgroup> sh_b: array<vec4<f32>, 1024>;\n"
        "var<private> NF4: array<f32, 16>;\n"  # private memory is not workgroup memory
        "var<workgroup> nf4_lut: array<f32, 16>;\n"
    )
    assert workgroup_bytes(code) == 49152 + 64


def _kernel(words: int) -> str:
    return (
        f"var<workgroup> big: array<u32, {words}>;\n"
        "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
        "@compute @workgroup_size(64)\n"
        "fn main(@builtin(local_invocation_index) i: u32) {\n"
        "  big[i] = i; workgroupBarrier(); o[i] = big[63u - i];\n}\n"
    )


def test_the_backend_refuses_a_kernel_past_the_device_limit(gpu):
    limit = gpu.limits["max_compute_workgroup_storage_size"]
    gpu.pipeline(_kernel(limit // 4))  # exactly the limit compiles
    with pytest.raises(LimitError, match=f"{limit + 4} bytes of workgroup memory"):
        gpu.pipeline(_kernel(limit // 4 + 1))
