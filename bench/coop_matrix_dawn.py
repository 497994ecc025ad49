"""Subgroup matrices natively, on Dawn (the ``wgpudawn`` package: wgpu-py's API on Chrome's
WebGPU implementation): what the adapter offers, f16 matmul kernels in them checked against
NumPy, and their speed beside torch CUDA.

Usage (a GPU host; ``pip install wgpudawn``)::

    python3 bench/coop_matrix_dawn.py --out DIR/coop_dawn.json

Dawn lists ``chromium-experimental-subgroup-matrix`` where the Vulkan driver has
``VK_KHR_cooperative_matrix``; it is experimental, so the instance is made with Dawn's
``allow_unsafe_apis`` toggle. Each kernel is generated for one configuration the adapter
lists (``--config``, default the first f16 -> f32 one): a workgroup of ``sy`` x ``sx``
subgroups, each computing ``fm`` x ``fn`` result fragments, with its A and B fragments read
straight from storage (``direct``) or from K-blocks staged in workgroup memory by the whole
workgroup (``staged``). A kernel is checked on a small non-square product (inputs multiples
of 1/256, exact in f16; err/bound <= 1 with the f32 accumulation bound) before it is timed.

Timing: wall clock of ``--repeats`` dispatches in one submission, after a warm-up, divided
by the count (launches included); torch the same way (calls back to back, then
``torch.cuda.synchronize``). TFLOP/s = 2*M*N*K / seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

FEATURE = "chromium-experimental-subgroup-matrix"
CHECK = (128, 96, 256)  # M, K, N of the correctness check; tiles below divide it or not


@dataclass(frozen=True)
class Layout:
    """A workgroup of ``sy`` x ``sx`` subgroups, each ``fm`` x ``fn`` fragments of the
    configuration's M x N; ``bk`` the K-block staged in workgroup memory (0: direct)."""

    fm: int
    fn: int
    sy: int
    sx: int
    bk: int = 0

    def name(self) -> str:
        how = f"staged{self.bk}" if self.bk else "direct"
        return f"{how} {self.sy}x{self.sx} sg, {self.fm}x{self.fn} frags"


LAYOUTS = (
    Layout(2, 2, 1, 1),
    Layout(2, 2, 2, 2),
    Layout(4, 2, 2, 2),
    Layout(2, 4, 2, 2),
    Layout(4, 4, 2, 2),
    Layout(2, 2, 2, 2, bk=32),
    Layout(4, 2, 2, 2, bk=32),
    Layout(4, 4, 2, 2, bk=32),
    Layout(4, 4, 2, 2, bk=64),
)


def kernel(cfg: dict, lay: Layout, m: int, k: int, n: int, sg: int) -> str:
    """WGSL for C (m x n, f32 or f16) = A (m x k) @ B (k x n), all row-major, in Dawn's
    subgroup-matrix spelling."""
    t, r = cfg["component_type"], cfg["result_component_type"]
    M, N, K = cfg["m"], cfg["n"], cfg["k"]
    pairs = [(i, j) for i in range(lay.fm) for j in range(lay.fn)]
    bm, bn = lay.sy * lay.fm * M, lay.sx * lay.fn * N
    lines = [
        "enable f16;",
        "enable chromium_experimental_subgroup_matrix;",
        f"alias L = subgroup_matrix_left<{t}, {K}, {M}>;",
        f"alias Rt = subgroup_matrix_right<{t}, {N}, {K}>;",
        f"alias Res = subgroup_matrix_result<{r}, {N}, {M}>;",
        f"@group(0) @binding(0) var<storage, read> a: array<{t}>;",
        f"@group(0) @binding(1) var<storage, read> b: array<{t}>;",
        f"@group(0) @binding(2) var<storage, read_write> c: array<{r}>;",
    ]
    if lay.bk:
        lines += [
            f"var<workgroup> sa: array<{t}, {bm * lay.bk}>;",
            f"var<workgroup> sb: array<{t}, {lay.bk * bn}>;",
        ]
    threads = sg * lay.sx * lay.sy
    lines += [
        f"@compute @workgroup_size({sg * lay.sx}, {lay.sy})",
        "fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_id) lid: vec3u,",
        "        @builtin(local_invocation_index) li: u32) {",
        f"  let wr = wid.y * {bm}u; let wc = wid.x * {bn}u;",
        f"  let sr = lid.y * {lay.fm * M}u; let sc = (lid.x / {sg}u) * {lay.fn * N}u;",
    ]
    lines += [f"  var acc{i}_{j} = Res();" for i, j in pairs]
    step = lay.bk or K
    lines.append(f"  for (var k0 = 0u; k0 < {k}u; k0 += {step}u) {{")
    if lay.bk:
        for arr, rows, cols, src, stride, base in (
            ("sa", bm, lay.bk, "a", k, f"wr * {k}u + k0"),
            ("sb", lay.bk, bn, "b", n, f"k0 * {n}u + wc"),
        ):
            lines += [
                f"    for (var e = li; e < {rows * cols}u; e += {threads}u) {{",
                f"      {arr}[e] = {src}[{base} + (e / {cols}u) * {stride}u + e % {cols}u];",
                "    }",
            ]
        lines.append("    workgroupBarrier();")
        lines.append(f"    for (var kk = 0u; kk < {lay.bk}u; kk += {K}u) {{")
        for i in range(lay.fm):
            lines.append(
                f"      let l{i} = subgroupMatrixLoad<L>(&sa, (sr + {i * M}u) * {lay.bk}u + kk, "
                f"false, {lay.bk}u);"
            )
        for j in range(lay.fn):
            lines.append(
                f"      let r{j} = subgroupMatrixLoad<Rt>(&sb, kk * {bn}u + sc + {j * N}u, "
                f"false, {bn}u);"
            )
        lines += [
            f"      acc{i}_{j} = subgroupMatrixMultiplyAccumulate(l{i}, r{j}, acc{i}_{j});"
            for i, j in pairs
        ]
        lines += ["    }", "    workgroupBarrier();"]
    else:
        for i in range(lay.fm):
            lines.append(
                f"    let l{i} = subgroupMatrixLoad<L>(&a, (wr + sr + {i * M}u) * {k}u + k0, "
                f"false, {k}u);"
            )
        for j in range(lay.fn):
            lines.append(
                f"    let r{j} = subgroupMatrixLoad<Rt>(&b, k0 * {n}u + wc + sc + {j * N}u, "
                f"false, {n}u);"
            )
        lines += [
            f"    acc{i}_{j} = subgroupMatrixMultiplyAccumulate(l{i}, r{j}, acc{i}_{j});"
            for i, j in pairs
        ]
    lines.append("  }")
    lines += [
        f"  subgroupMatrixStore(&c, (wr + sr + {i * M}u) * {n}u + wc + sc + {j * N}u, "
        f"acc{i}_{j}, false, {n}u);"
        for i, j in pairs
    ]
    lines.append("}")
    return "\n".join(lines)


def fits(cfg: dict, lay: Layout, m: int, k: int, n: int) -> bool:
    bm, bn = lay.sy * lay.fm * cfg["m"], lay.sx * lay.fn * cfg["n"]
    return m % bm == 0 and n % bn == 0 and k % (lay.bk or cfg["k"]) == 0


class Run:
    """One kernel bound to its operands: dispatch it, read C back, time it."""

    def __init__(self, wgpu, device, code: str, a: np.ndarray, b: np.ndarray, out_bytes, grid):
        usage = wgpu.BufferUsage
        self.wgpu, self.device, self.grid = wgpu, device, grid
        module = device.create_shader_module(code=code)
        self.pipeline = device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"}
        )
        bufs = [
            device.create_buffer_with_data(data=x.tobytes(), usage=usage.STORAGE) for x in (a, b)
        ]
        self.out = device.create_buffer(size=out_bytes, usage=usage.STORAGE | usage.COPY_SRC)
        self.group = device.create_bind_group(
            layout=self.pipeline.get_bind_group_layout(0),
            entries=[
                {"binding": i, "resource": {"buffer": x, "offset": 0, "size": x.size}}
                for i, x in enumerate([*bufs, self.out])
            ],
        )

    def run(self, times: int = 1) -> None:
        enc = self.device.create_command_encoder()
        for _ in range(times):
            p = enc.begin_compute_pass()
            p.set_pipeline(self.pipeline)
            p.set_bind_group(0, self.group)
            p.dispatch_workgroups(*self.grid)
            p.end()
        self.device.queue.submit([enc.finish()])

    def seconds(self, repeats: int) -> float:
        self.run(2)
        self.device.queue.on_submitted_work_done_sync()
        t0 = time.perf_counter()
        self.run(repeats)
        self.device.queue.on_submitted_work_done_sync()
        return (time.perf_counter() - t0) / repeats

    def result(self, dtype) -> np.ndarray:
        return np.frombuffer(self.device.queue.read_buffer(self.out), dtype=dtype).copy()


def make_run(wgpu, device, cfg, lay, m, k, n, sg, a, b) -> Run:
    out = np.float16 if cfg["result_component_type"] == "f16" else np.float32
    grid = (n // (lay.sx * lay.fn * cfg["n"]), m // (lay.sy * lay.fm * cfg["m"]), 1)
    code = kernel(cfg, lay, m, k, n, sg)
    return Run(wgpu, device, code, a, b, m * n * np.dtype(out).itemsize, grid)


def exact_operands(rng, m: int, k: int, n: int):
    """Multiples of 1/256 in [-1, 1): exact in f16, so only the accumulation rounds."""
    a = (rng.integers(-256, 256, size=(m, k)) / 256).astype(np.float16)
    b = (rng.integers(-256, 256, size=(k, n)) / 256).astype(np.float16)
    return a, b


def err_over_bound(got: np.ndarray, a: np.ndarray, b: np.ndarray, result: str) -> float:
    """max |C - A@B| / (K u |A|@|B| + u_out |C|): <= 1 passes (u: the unit roundoff)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    k = a.shape[1]
    u_acc = 2.0**-24 if result == "f32" else 2.0**-11
    bound = k * u_acc * (np.abs(a64) @ np.abs(b64)) + u_acc * np.abs(want) + 1e-30
    return float(np.max(np.abs(got.astype(np.float64).reshape(want.shape) - want) / bound))


def check(wgpu, device, cfg, lay, sg, rng) -> dict:
    m, k, n = CHECK
    bm, bn = lay.sy * lay.fm * cfg["m"], lay.sx * lay.fn * cfg["n"]
    m, n = max(m, bm) // bm * bm, max(n, bn) // bn * bn
    k = max(k, lay.bk or 0) // (lay.bk or cfg["k"]) * (lay.bk or cfg["k"])
    a, b = exact_operands(rng, m, k, n)
    try:
        r = make_run(wgpu, device, cfg, lay, m, k, n, sg, a, b)
        r.run()
        out = np.float16 if cfg["result_component_type"] == "f16" else np.float32
        got = r.result(out)
    except Exception as e:  # a kernel the compiler refuses: say what it said
        return {"layout": lay.name(), "shape": [m, k, n], "error": str(e)[:1500]}
    e = err_over_bound(got, a, b, cfg["result_component_type"])
    return {"layout": lay.name(), "shape": [m, k, n], "err_over_bound": e, "ok": e <= 1}


def torch_seconds(m, k, n, dtype: str, repeats: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    dt = {"f16": torch.float16, "f32": torch.float32}[dtype]
    a = torch.randn(m, k, device="cuda", dtype=dt)
    b = torch.randn(k, n, device="cuda", dtype=dt)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / repeats


def open_device(toggles: list[str]):
    import wgpudawn as wgpu
    from wgpudawn.backends.dawn import extras

    extras.set_instance_extras(enable_toggles=["allow_unsafe_apis", *toggles])
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    props = extras.get_adapter_properties(adapter)
    info = {
        "adapter": adapter.summary,
        "features": sorted(str(f) for f in adapter.features),
        "configs": props.get("subgroup_matrix_configs", []),
    }
    if FEATURE not in adapter.features:
        return wgpu, None, info
    wanted = [FEATURE, "shader-f16", "subgroups", "timestamp-query"]
    device = adapter.request_device_sync(
        required_features=[f for f in wanted if f in adapter.features]
    )
    return wgpu, device, info


def parse_sizes(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(x) for x in s.split("x")) for s in text.split(",")]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="coop_dawn.json")
    p.add_argument("--sizes", default="4096x4096x4096,8192x384x1536,8192x1536x384,8192x384x1152",
                   help="M x K x N products to time")  # fmt: skip
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--toggles", default="", help="more Dawn toggles, e.g. use_vulkan_memory_model")
    p.add_argument("--check-only", action="store_true")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    wgpu, device, info = open_device([t for t in args.toggles.split(",") if t])
    report = {**info, "checks": [], "timings": []}
    print("adapter:", info["adapter"])
    print("configs:", info["configs"])
    if device is None:
        print(f"{FEATURE} not offered")
        Path(args.out).write_text(json.dumps(report, indent=1))
        return 0
    floats = [c for c in info["configs"] if c["component_type"] == "f16"]
    for cfg in floats:
        sg = cfg.get("max_subgroup_size") or 32
        for lay in LAYOUTS:
            r = {"config": cfg, **check(wgpu, device, cfg, lay, sg, rng)}
            report["checks"].append(r)
            print("check", cfg["m"], cfg["n"], cfg["k"], cfg["result_component_type"], r["layout"],
                  r.get("err_over_bound"), r.get("error", "")[:300])  # fmt: skip
    good = [r for r in report["checks"] if r.get("ok")]
    if args.check_only:
        good = []
    for m, k, n in parse_sizes(args.sizes):
        a, b = exact_operands(rng, m, k, n)
        row = {"shape": [m, k, n], "kernels": {}}
        for r in good:
            cfg, lay = r["config"], next(x for x in LAYOUTS if x.name() == r["layout"])
            if not fits(cfg, lay, m, k, n):
                continue
            sg = cfg.get("max_subgroup_size") or 32
            name = f"{cfg['m']}x{cfg['n']}x{cfg['k']}->{cfg['result_component_type']} {lay.name()}"
            try:
                s = make_run(wgpu, device, cfg, lay, m, k, n, sg, a, b).seconds(args.repeats)
                row["kernels"][name] = 2 * m * n * k / s / 1e12
            except Exception as e:  # a layout the compiler refuses at this size
                row["kernels"][name] = str(e)[:300]
        for dt in ("f16", "f32"):
            s = torch_seconds(m, k, n, dt, args.repeats)
            row[f"torch_{dt}"] = None if s is None else 2 * m * n * k / s / 1e12
        report["timings"].append(row)
        shown = {x: (round(v, 1) if isinstance(v, float) else v) for x, v in row["kernels"].items()}
        print("time", row["shape"], shown,
              "torch f16", row["torch_f16"] and round(row["torch_f16"], 1),
              "torch f32", row["torch_f32"] and round(row["torch_f32"], 1))  # fmt: skip
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
