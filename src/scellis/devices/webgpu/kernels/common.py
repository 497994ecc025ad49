"""Shared WGSL generation (devices layer): bindings, windowed accessors, meta, grids.

Every kernel reads and writes tensors only through generated accessors
``ld_<name>(e)`` / ``st_<name>(e, v)`` that take an element index into the
operand's buffer. An operand larger than one storage binding is bound as several
windows of ``W`` elements (``W`` a multiple of the offset alignment) and the
accessor switches on ``e / W``; kernels never see the split. Shapes, strides and
offsets travel in a read-only ``meta: array<u32>`` so one pipeline serves every
shape of a given rank.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ....base.dtypes import DType
from ....base.errors import DTypeError, LimitError
from .mathlib import helpers_for

WG = 256  # default workgroup size of 1-D kernels

WGSL_TYPES = {"f32": "f32", "f16": "f16", "i32": "i32", "u32": "u32", "bool": "u32"}


def wgsl_type(dtype: DType) -> str:
    t = WGSL_TYPES.get(dtype.name)
    if t is None:
        raise DTypeError(f"WebGPU has no {dtype} (WGSL has no 64-bit floats)")
    return t


def storage_itemsize(dtype: DType) -> int:
    """Bytes per element on the GPU: bool is stored as u32."""
    return 4 if dtype.name == "bool" else dtype.itemsize


@dataclass
class Storage:
    """A logical buffer: one or more GPU buffers (chunks), each a whole number of windows."""

    chunks: list  # GPU buffer handles
    chunk_bytes: int
    nbytes: int
    window_bytes: int
    pool_key: int = 0
    # a weak reference to the recorded step (devices/webgpu/replay.py Trace) that made
    # this storage and keeps it for its schedule; None: the backend's pool takes it back
    # when its buffer dies
    owner: object = None

    def windows(self) -> list[tuple[object, int, int]]:
        """(gpu buffer, byte offset, byte size) of every binding window, in order."""
        out = []
        left = self.nbytes
        for buf in self.chunks:
            off = 0
            while off < self.chunk_bytes and left > 0:
                size = min(self.window_bytes, left)
                out.append((buf, off, (size + 3) // 4 * 4))
                off += self.window_bytes
                left -= size
        return out


@dataclass
class Source:
    """A kernel under construction: its bindings, meta words and WGSL text."""

    limits: dict
    has_f16: bool = False
    decls: list[str] = field(default_factory=list)
    fns: list[str] = field(default_factory=list)
    bindings: list = field(default_factory=list)
    meta: list[int] = field(default_factory=list)
    body: str = ""
    # scratch(numel) -> an f32 View for results passed between one op's launches; set
    # only where the kernel runs at once (the backend's encode), so None elsewhere
    scratch: object = None
    # a CPU-emulated adapter: kernels with a variant per kind of device pick theirs by it
    software: bool = False
    # the text of a finished kernel, kept (with_bindings): one string object, whose hash
    # the pipeline cache computes once
    kept_text: str | None = None
    # row reductions may fold through subgroup operations (kernels/variants.py decides)
    subgroups: bool = False
    # exp and log are the adapter's builtins (the kernel choice's ``native_math``)
    native_math: bool = False
    # the matrix unit f16 products may run on (``matmul_units.MatrixUnit``), or None
    matrix: object = None

    def helpers(self, expr: str) -> None:
        """Add the WGSL helper functions ``expr`` calls (mathlib), each once, in this
        kernel's math (``native_math``)."""
        for code in helpers_for(expr, self.native_math):
            if code not in self.fns:
                self.fns.append(code)

    def sibling(self, subgroups: bool = False) -> Source:
        """An empty kernel for the same device and math: an op's further launch. Its
        reductions fold through workgroup trees unless ``subgroups`` (each caller's
        choice: the launches that fold partials were checked with trees)."""
        return Source(self.limits, self.has_f16, software=self.software,
                      subgroups=subgroups, native_math=self.native_math,
                      matrix=self.matrix)  # fmt: skip

    def _bind(
        self, storage: Storage, name: str, ty: str, access: str, first: int = 0, count=None
    ) -> list[str]:
        names = []
        wins = storage.windows()[first:]
        for k, win in enumerate(wins[:count] if count is not None else wins):
            b = len(self.bindings)
            self.bindings.append(win)
            n = f"{name}_w{k}"
            self.decls.append(f"@group(0) @binding({b}) var<storage, {access}> {n}: array<{ty}>;")
            names.append(n)
        return names

    def _window_elems(self, storage: Storage, itemsize: int) -> int:
        return storage.window_bytes // itemsize

    def operand(
        self,
        name: str,
        view,
        write: bool = False,
        lanes: int = 1,
        widen: bool = False,
        window: int | None = None,
    ) -> str:
        """Declare ``view``'s buffer and its accessor; returns the WGSL element type.

        ``window``: bind only that one binding window of the buffer (a kernel split into
        launches that each stay inside one window per operand, where binding them all
        would pass maxStorageBuffersPerShaderStage); element indices stay the buffer's.

        With ``lanes`` = 4 the buffer is bound as ``array<vec4<T>>`` and the accessor
        takes and returns whole vectors (index = element index / 4); the caller keeps
        every access 4-aligned. Windows hold a multiple of 16 bytes, so none splits a vector.
        With ``widen`` an f16 buffer's accessors load f32 and store from f32 (rounding
        once, at the store), so one f32 kernel body serves f16 storage too.
        """
        ty = wgsl_type(view.dtype)
        if ty == "f16" and not self.has_f16:
            raise DTypeError(
                "f16 tensors need the adapter feature 'shader-f16', which this adapter lacks"
            )
        storage: Storage = view.buf.handle
        w = self._window_elems(storage, storage_itemsize(view.dtype))
        if lanes != 1:
            assert w % lanes == 0, "a binding window must hold whole vectors"
            ty, w = f"vec{lanes}<{ty}>", w // lanes
        access = "read_write" if write else "read"
        if window is None:
            names, index = self._bind(storage, name, ty, access), "e"
        else:  # one window: indices count from its first element, in accessor units
            names, index = self._bind(storage, name, ty, access, window, 1), f"e - {window * w}u"
        wide = widen and ty == "f16"
        face = "f32" if wide else ty
        load, store = ("f32({n}[{i}])", "f16(v)") if wide else ("{n}[{i}]", "v")
        # a read_write operand can be read too (in-place updates read their targets)
        accessors = [(f"fn ld_{name}(e: u32) -> {face}", f"return {load};")]
        if write:
            accessors.append((f"fn st_{name}(e: u32, v: {face})", f"{{n}}[{{i}}] = {store};"))
        for sig, ret in accessors:
            if len(names) == 1:
                self.fns.append(f"{sig} {{ {ret.format(n=names[0], i=index)} }}")
                continue
            cases = "".join(
                f" case {k}u: {{ {ret.format(n=n, i='l')} }}" for k, n in enumerate(names[:-1])
            )
            last = ret.format(n=names[-1], i="l")
            self.fns.append(
                f"{sig} {{ let w = e / {w}u; let l = e - w * {w}u; switch w {{{cases}"
                f" default: {{ {last} }} }} }}"
            )
        return ty

    def add_meta(self, *values: int) -> int:
        """Append u32 words to meta; returns the index of the first."""
        at = len(self.meta)
        for v in values:
            self.meta.append(int(v) & 0xFFFFFFFF)
        return at

    def text(self) -> str:
        if self.kept_text is not None:
            return self.kept_text
        enable = "enable f16;\n" if self.has_f16 and any("f16" in d for d in self.decls) else ""
        if self.subgroups and "subgroup" in self.body + "".join(self.fns):
            enable += "enable subgroups;\n"
        if "subgroupMatrix" in self.body:
            enable += "enable chromium_experimental_subgroup_matrix;\n"
        meta_b = len(self.bindings)
        return (
            enable
            + "\n".join(self.decls)
            + f"\n@group(0) @binding({meta_b}) var<storage, read> mt: array<u32>;\n"
            + "\n".join(self.fns)
            + "\n"
            + self.body
        )

    def with_bindings(self, bindings: list) -> Source:
        """The same kernel (text, meta) bound to ``bindings``: a kept encoding reused
        (``webgpu/launch_cache.py``). The lists are shared: a built kernel is not changed."""
        return Source(self.limits, self.has_f16, self.decls, self.fns, bindings, self.meta,
                      self.body, None, self.software, self.text(), self.subgroups,
                      self.native_math, self.matrix)  # fmt: skip

    def check_bindings(self) -> None:
        limit = self.limits["max_storage_buffers_per_shader_stage"]
        if len(self.bindings) + 1 > limit:
            raise LimitError(
                f"this op needs {len(self.bindings) + 1} storage bindings, over the device's "
                f"maxStorageBuffersPerShaderStage of {limit}; the tensors are too large for "
                "its maxStorageBufferBindingSize"
            )


def grid_1d(threads: int, limits: dict, wg: int = WG) -> tuple[int, int, int]:
    """Workgroup counts for ``threads`` invocations: 2-D past the per-dimension limit,
    and capped at its square (``main_1d`` kernels then stride over the remainder)."""
    n = max(1, -(-threads // wg))
    cap = limits["max_compute_workgroups_per_dimension"]
    if n <= cap:
        return n, 1, 1
    return cap, min(cap, -(-n // cap)), 1


def main_1d(body: str, wg: int = WG) -> str:
    """A compute entry running ``body`` for each flat index ``i`` < ``n`` = mt[0].

    A grid-stride loop: every invocation takes i, i + grid size, ... so any ``n``
    runs correctly on any grid, however low the workgroup limits are.
    """
    return (
        f"@compute @workgroup_size({wg})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, "
        "@builtin(num_workgroups) nwg: vec3<u32>, "
        "@builtin(local_invocation_index) lid: u32) {\n"
        "  let n = mt[0];\n"
        f"  let grid = nwg.x * nwg.y * {wg}u;\n"
        f"  for (var i = (wid.x + wid.y * nwg.x) * {wg}u + lid; i < n; i += grid) {{\n"
        f"{body}\n  }}\n}}\n"
    )


def strided_index(src: Source, view, out_shape, var: str) -> str:
    """WGSL computing ``var`` = element index in ``view`` for flat output index ``i``.

    ``view`` is laid over ``out_shape`` (same rank). Contiguous views skip the divmods.
    """
    from_contig = tuple(view.shape) == tuple(out_shape) and _contiguous(view)
    if from_contig:
        at = src.add_meta(view.offset)
        return f"  let {var} = mt[{at}u] + i;"
    nd = len(out_shape)
    if nd == 0:
        at = src.add_meta(view.offset)
        return f"  let {var} = mt[{at}u];"
    at = src.add_meta(view.offset, *out_shape, *view.strides)
    lines = [f"  var {var}_r = i;", f"  var {var} = mt[{at}u];"]
    for d in range(nd - 1, -1, -1):
        size, stride = f"mt[{at + 1 + d}u]", f"mt[{at + 1 + nd + d}u]"
        if d:
            lines.append(f"  {var} += ({var}_r % {size}) * {stride}; {var}_r = {var}_r / {size};")
        else:
            lines.append(f"  {var} += {var}_r * {stride};")
    return "\n".join(lines)


def _contiguous(view) -> bool:
    expect = 1
    for s, st in zip(reversed(view.shape), reversed(view.strides)):
        if s != 1 and st != expect:
            return False
        expect *= s
    return True


def f32_bits(x: float) -> int:
    """``x`` rounded to f32, as the u32 word a meta slot carries (WGSL bitcasts it back)."""
    return struct.unpack("<I", struct.pack("<f", float(x)))[0]
