"""Matrix units from WGSL: wgpu's cooperative matrices natively, Chromium's subgroup matrices
in a tab. What the adapter offers, a checked matmul where it does, and its speed.

Usage::

    PYTHONPATH=src python3 bench/coop_matrix.py --chromium /usr/bin/chromium     # here
    PYTHONPATH=src python3 bench/coop_matrix.py --browser-root /tmp/g --out DIR/coop.json
                                                            # a GPU host, browser_gpu's payload

Native (wgpu-py, wgpu-native): every adapter's features and the limits Scellis reads; the
Vulkan driver's own cooperative-matrix configurations (bench/vk_coopmat.py, in a child
process); then, where the adapter offers ``cooperative-matrix``, a device with it and, for
each kernel the driver lists a configuration for (``--all-kernels``: each of them), a
matmul in ``coop_mat`` fragments checked against NumPy in each spelling of FORMS (naga's
``coopLoadT``, row-major, and ``coopLoad``; a zero-constructed or loaded accumulator), the
first that agrees then timed at ``--sizes`` beside Scellis'
own matmul (f32 and f16) and torch CUDA (f32 with TF32 off, and f16) where torch has CUDA.
Where it is not offered, the report says which link is missing.

Timing: WebGPU figures are GPU time from timestamp queries, each dispatch in a compute pass
of its own, median of ``--repeats`` after ``--warmup`` dispatches (Scellis' kernel through
bench/matmul.py's ``launch_gpu_times``: the same method). torch's figure is bench/matmul.py's
wall-clock method (calls back to back, then ``torch.cuda.synchronize``), which includes
launch costs that the GPU clock leaves out, so it flatters WebGPU slightly.
TFLOP/s = 2*M*N*K / seconds. A result is checked as bench/matmul.py checks its own:
err/bound <= 1, with the bound of the accumulation type.

Browser: bench/coop_matrix_browser.py (Chromium's ``chromium-experimental-subgroup-matrix``).
One JSON (``--out``) holds every finding; a short summary goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import wgpu  # noqa: E402
from browser_gpu import FLAG_SETS  # noqa: E402
from coop_matrix_browser import browser_report, browser_summary  # noqa: E402
from matmul import check_rows, launch_gpu_times, time_samples, torch_cuda_f32  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.devices.native_wgpu import choose_adapter  # noqa: E402
from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.runtime.dispatch import apply  # noqa: E402

HERE = Path(__file__).resolve().parent
FEATURE = "cooperative-matrix"
# the kernels tried: (name, tile, A/B type, accumulator type). naga spells coop_mat8x8 and
# coop_mat16x16 only; wgpu-native's header says its Vulkan path wants an 8x8x8 f32
# configuration, while NVIDIA's drivers list f16 ones at 16x16x16 (and others)
KERNELS = (("f32-8x8", 8, "f32", "f32"), ("f16-16x16-f32acc", 16, "f16", "f32"),
           ("f16-16x16-f16acc", 16, "f16", "f16"), ("f16-8x8-f32acc", 8, "f16", "f32"))  # fmt: skip
NP = {"f32": np.float32, "f16": np.float16}
# how a kernel spells its loads, stores and zero accumulator: upstream's example reads its
# row-major buffers with the T forms and loads C from a zeroed buffer; a zero-value
# constructor is tried first, the plain (column-major) forms as a check of the layout
FORMS = {
    "coopLoadT, C = TC()": ("coopLoadT", "coopStoreT", "zero"),
    "coopLoad, C = TC()": ("coopLoad", "coopStore", "zero"),
    "coopLoadT, C loaded": ("coopLoadT", "coopStoreT", "load"),
    "coopLoad, C loaded": ("coopLoad", "coopStore", "load"),
}
CHECK_SHAPE = (128, 96, 64)  # M, K, N: small, not square, a multiple of every tile below


# ---------------------------------------------------------------- what the hardware says


def vulkan_probe() -> dict:
    """bench/vk_coopmat.py's report, from a child process (a driver fault stays there)."""
    try:
        r = subprocess.run([sys.executable, str(HERE / "vk_coopmat.py")], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": "the Vulkan probe did not answer in 60 s"}
    if r.returncode != 0:
        return {"error": f"the Vulkan probe exited {r.returncode}: {r.stderr.strip()[-400:]}"}
    out = json.loads(r.stdout)
    out["vulkaninfo"] = "present" if _which("vulkaninfo") else "not installed (ctypes probe used)"
    return out


def _which(name: str) -> bool:
    return any((Path(p) / name).is_file() for p in os.environ.get("PATH", "").split(":"))


def adapter_rows() -> list[dict]:
    rows = []
    for a in wgpu.gpu.enumerate_adapters_sync():
        i = a.info
        rows.append({
            "name": i.get("device", ""), "backend": i.get("backend_type", ""),
            "type": i.get("adapter_type", ""), "description": i.get("description", ""),
            "features": sorted(str(f) for f in a.features),
            "cooperative_matrix": FEATURE in a.features,
            "limits": {k: int(v) for k, v in a.limits.items() if "compute" in k or "storage" in k},
        })  # fmt: skip
    return rows


def listed(vk: dict, tile: int, ab: str, acc: str) -> bool:
    """Whether any Vulkan device lists a subgroup-scope tile x tile x tile configuration with
    A and B of ``ab`` and C and the result of ``acc``."""
    want = {"M": tile, "N": tile, "K": tile, "A": ab, "B": ab, "C": acc, "result": acc,
            "scope": "subgroup"}  # fmt: skip
    return any(
        all(c.get(k) == v for k, v in want.items())
        for d in vk.get("devices", [])
        for c in d.get("configs", [])
    )


def why_not(adapter_info: dict, vk: dict) -> str:
    """One line naming the missing link, where the adapter lacks the feature."""
    if "error" in vk:
        return f"the adapter does not offer {FEATURE}; Vulkan was not readable: {vk['error']}"
    devs = [d for d in vk.get("devices", []) if d.get("name") == adapter_info["name"]]
    d = devs[0] if devs else None
    if d is None:
        return f"the adapter does not offer {FEATURE} (no Vulkan device of that name)"
    if not d["has_extension"]:
        return (f"the adapter does not offer {FEATURE}: its Vulkan driver ({d['name']}, "
                f"driver {d['driver_version']}) has no VK_KHR_cooperative_matrix")  # fmt: skip
    if not d.get("vulkan_memory_model_device_scope"):
        return (f"the adapter does not offer {FEATURE}: VK_KHR_cooperative_matrix is there but "
                "vulkanMemoryModelDeviceScope is off (wgpu requires both)")  # fmt: skip
    shapes = sorted({f"{c['M']}x{c['N']}x{c['K']} {c['A']}->{c['result']}" for c in d["configs"]})
    return (f"the adapter does not offer {FEATURE} although the driver lists "
            f"{len(d['configs'])} configurations ({', '.join(shapes[:8])}): this wgpu build "
            "exposes the feature only for configurations it can express")  # fmt: skip


# ---------------------------------------------------------------- the kernel


def coop_wgsl(tile: int, ab: str, acc: str, frags: tuple[int, int], shape, form: str,
              workgroup: int) -> str:  # fmt: skip
    """C[M,N] = A[M,K] @ B[K,N], row-major buffers. A workgroup (one subgroup, on a GPU whose
    subgroups are ``workgroup`` wide) owns fm x fn fragments of C and walks K, loading its
    A and B fragments straight from the storage buffers (the L1/L2 caches do the reuse)."""
    m, k, n = shape
    fm, fn = frags
    load, store, init = FORMS[form]
    lines = ["enable f16;"] if "f16" in (ab, acc) else []
    lines += [
        "enable wgpu_cooperative_matrix;",
        f"alias TA = coop_mat{tile}x{tile}<{ab}, A>;",
        f"alias TB = coop_mat{tile}x{tile}<{ab}, B>;",
        f"alias TC = coop_mat{tile}x{tile}<{acc}, C>;",
        f"@group(0) @binding(0) var<storage, read> a: array<{ab}>;",
        f"@group(0) @binding(1) var<storage, read> b: array<{ab}>;",
        f"@group(0) @binding(2) var<storage, read_write> c: array<{acc}>;",
        f"@compute @workgroup_size({workgroup})",
        "fn main(@builtin(workgroup_id) wid: vec3<u32>) {",
        f"  let row0 = wid.y * {fm * tile}u;",
        f"  let col0 = wid.x * {fn * tile}u;",
    ]
    for i in range(fm):
        for j in range(fn):
            at = f"(row0 + {i * tile}u) * {n}u + col0 + {j * tile}u"
            zero = "TC()" if init == "zero" else f"{load}<TC>(&c[{at}], {n}u)"
            lines.append(f"  var c{i}_{j} = {zero};")
    lines.append(f"  for (var kk = 0u; kk < {k}u; kk += {tile}u) {{")
    lines += [f"    let a{i} = {load}<TA>(&a[(row0 + {i * tile}u) * {k}u + kk], {k}u);"
              for i in range(fm)]  # fmt: skip
    lines += [f"    let b{j} = {load}<TB>(&b[kk * {n}u + col0 + {j * tile}u], {n}u);"
              for j in range(fn)]  # fmt: skip
    lines += [f"    c{i}_{j} = coopMultiplyAdd(a{i}, b{j}, c{i}_{j});"
              for i in range(fm) for j in range(fn)]  # fmt: skip
    lines.append("  }")
    lines += [f"  {store}(c{i}_{j}, &c[(row0 + {i * tile}u) * {n}u + col0 + {j * tile}u], {n}u);"
              for i in range(fm) for j in range(fn)]  # fmt: skip
    lines.append("}")
    return "\n".join(lines) + "\n"


class CoopRun:
    """One compiled kernel on one device, with its buffers bound."""

    def __init__(self, device, code: str, a, b, out_dtype, grid):
        self.device, self.grid = device, grid
        module = device.create_shader_module(code=code)
        self.pipeline = device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"})  # fmt: skip
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.c_bytes = a.shape[0] * b.shape[1] * np.dtype(out_dtype).itemsize
        bufs = [device.create_buffer_with_data(data=x.tobytes(), usage=usage) for x in (a, b)]
        self.c = device.create_buffer(size=self.c_bytes, usage=usage)
        entries = [{"binding": i, "resource": {"buffer": buf}} for i, buf in enumerate(bufs)]
        entries.append({"binding": 2, "resource": {"buffer": self.c}})
        self.group = device.create_bind_group(
            layout=self.pipeline.get_bind_group_layout(0), entries=entries)  # fmt: skip
        self.out_dtype, self.out_shape = out_dtype, (a.shape[0], b.shape[1])

    def _pass(self, enc, timestamps=None):
        p = enc.begin_compute_pass(timestamp_writes=timestamps)
        p.set_pipeline(self.pipeline)
        p.set_bind_group(0, self.group)
        p.dispatch_workgroups(*self.grid)
        p.end()

    def run(self, times: int = 1) -> None:
        enc = self.device.create_command_encoder()
        for _ in range(times):
            self._pass(enc)
        self.device.queue.submit([enc.finish()])

    def result(self) -> np.ndarray:
        data = self.device.queue.read_buffer(self.c)
        return np.frombuffer(bytes(data), dtype=self.out_dtype).reshape(self.out_shape)

    def gpu_seconds(self, repeats: int) -> list[float]:
        """Each dispatch in a pass of its own, stamped at its start and end."""
        qs = self.device.create_query_set(type="timestamp", count=2 * repeats)
        enc = self.device.create_command_encoder()
        for i in range(repeats):
            self._pass(enc, {"query_set": qs, "beginning_of_pass_write_index": 2 * i,
                             "end_of_pass_write_index": 2 * i + 1})  # fmt: skip
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        buf = self.device.create_buffer(size=16 * repeats, usage=usage)
        enc.resolve_query_set(qs, 0, 2 * repeats, buf, 0)
        self.device.queue.submit([enc.finish()])
        stamps = np.frombuffer(bytes(self.device.queue.read_buffer(buf)), dtype=np.uint64)
        return [max(0, int(stamps[2 * i + 1]) - int(stamps[2 * i])) * 1e-9 for i in range(repeats)]


def err_over_bound(got, a, b, acc: str) -> float:
    """max |got - a@b| / bound; the bound is bench/matmul.py's with the accumulator's unit
    roundoff (f32 2^-23 per step of K, f16 2^-10), plus one rounding of the result."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    u = 2.0**-23 if acc == "f32" else 2.0**-10
    bound = a.shape[1] * u * (np.abs(a64) @ np.abs(b64)) + 2 * u * np.abs(want)
    err = np.abs(got.astype(np.float64) - want)
    return float(np.max(err / np.maximum(bound, 1e-30)))


def operands(rng, m: int, k: int, n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    a = rng.standard_normal((m, k), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(dtype)
    return a, b


def make_run(device, kernel, frags, shape, form, workgroup, a, b) -> CoopRun:
    name, tile, ab, acc = kernel
    m, k, n = shape
    code = coop_wgsl(tile, ab, acc, frags, shape, form, workgroup)
    grid = (n // (frags[1] * tile), m // (frags[0] * tile), 1)
    return CoopRun(device, code, a, b, NP[acc], grid)


def check_kernel(device, kernel, frags, workgroup, rng) -> dict:
    """Compile ``kernel`` in each of FORMS and check it on CHECK_SHAPE."""
    _, tile, ab, acc = kernel
    a, b = operands(rng, CHECK_SHAPE[0], CHECK_SHAPE[1], CHECK_SHAPE[2], NP[ab])
    out = {}
    for form in FORMS:
        try:
            run = make_run(device, kernel, frags, CHECK_SHAPE, form, workgroup, a, b)
            run.run()
            out[form] = {"err_over_bound": err_over_bound(run.result(), a, b, acc)}
        except Exception as e:  # a compile or validation error is a finding, not a crash
            out[form] = {"error": str(e).strip()[:1500]}
    return out


def working_form(check: dict) -> str | None:
    ok = [form for form, r in check.items() if r.get("err_over_bound", 2.0) <= 1.0]
    return ok[0] if ok else None


# ---------------------------------------------------------------- the baselines


def scellis_gpu_seconds(dev, a, b) -> tuple[float, float]:
    """(median GPU seconds of Scellis' own matmul kernels, err/bound) for ``a @ b``; the
    seconds are None where the device has no timestamp queries."""
    ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
    y = apply("matmul", (ta, tb))
    launches = dev.encode("matmul", [ta.device_view, tb.device_view], [y.device_view], {})
    us = launch_gpu_times(dev, launches)
    return (sum(us) * 1e-6 if us else None), check_rows(dev, y, a, b)


def torch_seconds(a, b, args) -> float | None:
    torch = torch_cuda_f32()
    if torch is None:
        return None
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    stats = time_samples(lambda: torch.matmul(ta, tb), torch.cuda.synchronize, args.warmup,
                         args.repeats, 0.05)  # fmt: skip
    return stats["median_s"]


# ---------------------------------------------------------------- the native report


def parse_sizes(text: str) -> list[tuple[int, int, int]]:
    out = []
    for item in filter(None, text.split(",")):
        d = [int(x) for x in item.lower().split("x")]
        if len(d) not in (1, 3) or min(d) < 1:
            raise ValueError(item)
        out.append((d[0],) * 3 if len(d) == 1 else tuple(d))
    return out


def fits(shape, tile: int, frags) -> bool:
    m, k, n = shape
    return m % (frags[0] * tile) == 0 and n % (frags[1] * tile) == 0 and k % tile == 0


def native_report(args) -> dict:
    vk = vulkan_probe()
    report = {"adapters": adapter_rows(), "vulkan": vk}
    adapter = choose_adapter(args.adapter)
    info = {"name": adapter.info.get("device", ""), "backend": adapter.info.get("backend_type")}
    report["chosen"] = info
    if FEATURE not in adapter.features:
        report["verdict"] = why_not(info, vk)
        return report
    wanted = [FEATURE] + [f for f in ("shader-f16", "timestamp-query") if f in adapter.features]
    try:
        device = adapter.request_device_sync(required_features=wanted)
    except Exception as e:
        report["verdict"] = f"the adapter offers {FEATURE}, but a device with it was refused: {e}"
        return report
    report["device_features"] = sorted(str(f) for f in device.features)
    report["kernels"] = kernels_report(device, vk, args)
    usable = [k for k, r in report["kernels"].items() if r.get("form")]
    report["verdict"] = (
        f"{FEATURE} works: {', '.join(usable)} checked against NumPy"
        if usable
        else f"{FEATURE} was granted but no kernel compiled and checked"
    )
    if usable and "timestamp-query" in device.features:
        report["timings"] = timings(device, report["kernels"], args)
    return report


def kernels_report(device, vk: dict, args) -> dict:
    rng = np.random.default_rng(0)
    out = {}
    frags = args.frags[0]
    for kernel in KERNELS:
        name, tile, ab, acc = kernel
        if not (args.all_kernels or listed(vk, tile, ab, acc)):
            out[name] = {"skipped": "the driver lists no such configuration (--all-kernels)"}
            continue
        if "f16" in (ab, acc) and "shader-f16" not in device.features:
            out[name] = {"skipped": "no shader-f16"}
            continue
        check = check_kernel(device, kernel, frags, args.workgroup, rng)
        out[name] = {"check": check, "form": working_form(check)}
    return out


def timings(device, kernels: dict, args) -> list[dict]:
    base = WebGPUBackend(adapter=args.adapter)
    rng = np.random.default_rng(1)
    rows = []
    for shape in args.sizes:
        m, k, n = shape
        row = {"shape": f"{m}x{k}x{n}", "tflops": {}, "err_over_bound": {}}
        flop = 2.0 * m * n * k
        for dtype in ("f32", "f16"):
            a, b = operands(rng, m, k, n, NP[dtype])
            if dtype == "f32" or base.info.has_f16:
                secs, err = scellis_gpu_seconds(base, a, b)
                if secs:
                    row["tflops"][f"scellis-{dtype}"] = flop / secs / 1e12
                row["err_over_bound"][f"scellis-{dtype}"] = err
            secs = torch_seconds(a, b, args)
            if secs:
                row["tflops"][f"torch-{dtype}"] = flop / secs / 1e12
            coop_rows(device, kernels, shape, dtype, a, b, row, args)
        rows.append(row)
        print(f"  {row['shape']}: " + ", ".join(
            f"{k} {v:.3g}" for k, v in row["tflops"].items()) + " TFLOP/s", flush=True)  # fmt: skip
    return rows


def coop_rows(device, kernels, shape, dtype, a, b, row, args) -> None:
    """Time each checked kernel whose A/B type is ``dtype`` on ``shape``, per fragment block."""
    flop = 2.0 * shape[0] * shape[1] * shape[2]
    for kernel in KERNELS:
        name, tile, ab, acc = kernel
        form = kernels.get(name, {}).get("form")
        if ab != dtype or form is None:
            continue
        for frags in args.frags:
            label = f"coop-{name}-{frags[0]}x{frags[1]}"
            if not fits(shape, tile, frags):
                row.setdefault("errors", {})[label] = "the shape is not a multiple of the block"
                continue
            try:
                run = make_run(device, kernel, frags, shape, form, args.workgroup, a, b)
                run.run()  # checked after one run: a kernel that loads C adds to it
                row["err_over_bound"][label] = err_over_bound(run.result()[:64], a[:64], b, acc)
                run.run(args.warmup)
                secs = statistics.median(run.gpu_seconds(args.repeats))
                row["tflops"][label] = flop / secs / 1e12
            except Exception as e:
                row.setdefault("errors", {})[label] = str(e).strip()[:600]


def native_summary(r: dict) -> list[str]:
    lines = [f"native: {r['chosen']['name']} ({r['chosen']['backend']}): {r['verdict']}"]
    for d in r["vulkan"].get("devices", []):
        shapes = sorted({f"{c['M']}x{c['N']}x{c['K']} {c['A']}*{c['B']}+{c['C']}->{c['result']}"
                         f" ({c['scope']})" for c in d.get("configs", [])})  # fmt: skip
        ext = "yes" if d["has_extension"] else "no"
        listing = f"; {len(shapes)} configs: " + "; ".join(shapes) if shapes else ""
        lines.append(f"  Vulkan {d['name']} (driver {d['driver_version']}): "
                     f"VK_KHR_cooperative_matrix {ext}{listing}")  # fmt: skip
    if "error" in r["vulkan"]:
        lines.append(f"  Vulkan: {r['vulkan']['error']}")
    for name, k in r.get("kernels", {}).items():
        lines.append(f"  kernel {name}: {_kernel_line(k)}")
    for row in r.get("timings", []):
        cells = ", ".join(f"{key} {v:.3g}" for key, v in row["tflops"].items())
        lines.append(f"  {row['shape']} TFLOP/s: {cells}")
    return lines


def _kernel_line(k: dict) -> str:
    if "skipped" in k:
        return f"skipped ({k['skipped']})"
    cells = []
    for form, r in k["check"].items():
        got = f"err/bound {r['err_over_bound']:.3g}" if "err_over_bound" in r else r["error"]
        cells.append(f"{form}: {got[:200]}")
    return "; ".join(cells)


def frag_list(text: str) -> list[tuple[int, int]]:
    frags = [tuple(int(x) for x in f.split("x")) for f in text.split(",") if f]
    if not frags or any(len(f) != 2 or min(f) < 1 for f in frags):
        raise ValueError(text)
    return frags


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--adapter", default=None, help="substring of the adapter name/backend")
    p.add_argument("--sizes", default="4096,8192x384x1536", help="N or MxKxN, comma separated")
    p.add_argument("--frags", default="2x2,4x4", help="fragments of C per workgroup, MxN")
    p.add_argument(
        "--workgroup", type=int, default=32, help="invocations a workgroup (one subgroup)"
    )
    p.add_argument(
        "--all-kernels", action="store_true", help="try kernels the driver does not list"
    )
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--chromium", help="a Chromium binary to probe here (e.g. /usr/bin/chromium)")
    p.add_argument("--browser-root", help="bench/browser_gpu.py's unpacked payload (GPU host)")
    p.add_argument("--flag-sets", default=None,
                   help="browser_gpu.py flag sets to visit (default: vulkan-swcomp on a "
                   "--browser-root, swiftshader with --chromium)")  # fmt: skip
    p.add_argument("--browser-timeout", type=float, default=90, help="seconds a page may take")
    p.add_argument(
        "--no-install-gl", action="store_true", help="with --browser-root: leave / alone"
    )
    p.add_argument("--skip-native", action="store_true")
    p.add_argument("--out", default="bench/out/coop_matrix.json")
    args = p.parse_args(argv)
    try:
        args.sizes, args.frags = parse_sizes(args.sizes), frag_list(args.frags)
    except ValueError:
        print(
            "error: --sizes takes N or MxKxN items (4096,8192x384x1536), --frags MxN items (2x2)",
            file=sys.stderr,
        )
        return 2
    unknown = [f for f in (args.flag_sets or "").split(",") if f and f not in FLAG_SETS]
    if unknown:
        print(f"error: unknown flag set(s) {', '.join(unknown)}; known: {', '.join(FLAG_SETS)}",
              file=sys.stderr)  # fmt: skip
        return 2
    t0 = time.perf_counter()
    report = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    if not args.skip_native:
        report["native"] = native_report(args)
    report["browser"] = browser_report(args, err_over_bound)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    if "native" in report:
        print("\n".join(native_summary(report["native"])))
    print("\n".join(browser_summary(report["browser"])))
    print(f"wrote {out} ({report['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
