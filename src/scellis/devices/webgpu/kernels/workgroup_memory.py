"""How much workgroup memory a WGSL kernel declares (devices layer).

WebGPU requires a pipeline's ``var<workgroup>`` storage to stay within the device's
``maxComputeWorkgroupStorageSize``, but not every implementation checks it: through wgpu
on an NVIDIA GPU a kernel 64 bytes over the limit compiled, then faulted on the GPU and
lost the device. The backend therefore counts the declared bytes itself before it
compiles a kernel, and refuses one that does not fit with a clear error.
"""

from __future__ import annotations

import re

_DECL = re.compile(r"var<workgroup>\s+\w+\s*:\s*([^;=]+?)\s*;")
_SCALAR = {"f32": 4, "i32": 4, "u32": 4, "f16": 2, "bool": 4}


def type_bytes(ty: str) -> int:
    """Bytes of a WGSL storable type as laid out in memory (vec3 padded to vec4); 0 for a
    type this count does not know (it then never refuses a kernel wrongly)."""
    ty = ty.replace(" ", "")
    if ty in _SCALAR:
        return _SCALAR[ty]
    atomic = re.fullmatch(r"atomic<(\w+)>", ty)
    if atomic:
        return _SCALAR.get(atomic.group(1), 0)
    vec = re.fullmatch(r"vec([234])<(\w+)>", ty)
    if vec:
        lanes = 4 if vec.group(1) == "3" else int(vec.group(1))
        return lanes * _SCALAR.get(vec.group(2), 0)
    arr = re.fullmatch(r"array<(.+),(\d+)u?>", ty)
    if arr:
        return type_bytes(arr.group(1)) * int(arr.group(2))
    return 0


def workgroup_bytes(code: str) -> int:
    """The workgroup memory ``code`` declares, in bytes."""
    return sum(type_bytes(m.group(1)) for m in _DECL.finditer(code))
