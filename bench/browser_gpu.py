"""bench/browser_train_step.py's workloads in Chromium on a machine with a real GPU and no
network: chromium-headless-shell is driven directly (no Playwright, no node), pages post
their results to a small local server.

Two steps. Here (network, node, the repo): ``pack`` builds the Scellis site, copies the
tf.js files the peer page loads, the files the headless shell needs from chromium-common,
the shared libraries it links and the GL/Vulkan loader debs into ``p2/rest.tar.gz``, and
splits the headless shell's deb (already xz) into ``p1/`` and ``p2/`` so that each part
can travel in its own device call. There: ``run`` installs the loader debs, links in only
the libraries the machine lacks, checks which Chromium flag set gives a WebGPU adapter
that is not a CPU one, then times the rows: Scellis (its Web Worker, Pyodide, WebGPU;
eager and ``scellis-replay``, the recorded schedule) and tf.js on webgpu, webgl and wasm,
each in a fresh profile.

    python3 bench/browser_gpu.py pack --out .cr [--debs DIR]
    cat .cr/p1/shell.deb.* .cr/p2/shell.deb.* > /tmp/shell.deb
    mkdir -p /tmp/g && dpkg -x /tmp/shell.deb /tmp/g/x && tar -xzf .cr/p2/rest.tar.gz -C /tmp/g
    python3 /tmp/g/browser_gpu.py run --root /tmp/g --out "$OUT" [--steps 20 --repeats 5]
        [--models char_tf,tf_d384 --impls scellis,scellis-replay,webgpu,webgl] [--tiny]

The Transformer workloads (``char_tf``, ``tf_d384``) come from browser_workloads.py, which
travels beside this file; ``--tiny`` runs every model at its smoke-check size. A Scellis
row carries the tab's start-up marks (``boot_marks``, ms since navigation: Pyodide,
wheels, imports, WebGPU device) and ``first_step_done_ms``, navigation to the first
finished training step.

The QLoRA workloads (``--models qlora100m`` or ``qlora1b``, TinyLlama's shape: 2.2 GB
of float16 weights, which the worker mounts as Blobs and the import reads tensor by
tensor into the store, so the engine's 4 GiB address space holds the stored object once,
not the folder too; ``qlora-tiny`` is the same page at toy size,
for a smoke run on SwiftShader with ``--allow-cpu``) time what a user does in the tab:
``run`` first writes a random-weight Hugging Face Llama folder (transformers'
``save_pretrained`` when transformers is installed, else the same layout written with
NumPy) in float16 under ``ROOT/hf/`` (half the bytes into the tab; the import keeps f16
and a device without shader-f16 gets f32 on upload), serves it, and the page fetches
its files, imports them through the worker's ``import_files`` (Import model's
command), picks QLoRA (Model View's ``finetune`` edit: NF4, LoRA rank 8 on every dense
block), pins text data, times the load and the on-device quantisation
(``bench_quantize``) and trains ``--steps`` steps through ``train`` (the Train button's
command). Reported: import_s, build_s (the load, each weight quantised as it arrives),
ms_per_step (median of the steps
after the first two, each ending on its loss readback), first/last loss, the plan's
peak and quantised bytes.

Timing is the same as bench/browser_train_step.py's: ``steps`` steps then one loss
readback, median of ``repeats`` blocks; "engine start" is navigation start to the worker's
ready mark (performance.now() in the page), "first step" is measured by each side. Every
visit starts cold: a fresh profile, and the GPU drivers' shader disk caches in it too.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

from browser_workloads import TRANSFORMERS, sized

ROOT = Path(__file__).resolve().parents[1]
# the tab's benchmark commands, carried beside the site's wheel
TAB_BENCH = ROOT / "bench" / "tab" / "tabbench"
# where the shell and its resources sit once the deb is unpacked (dpkg -x DEB ROOT/x)
CHROME_DIR = "x/usr/lib/chromium"
# what the shell needs from chromium-common (the rest of that deb is left behind)
COMMON_FILES = [
    "icudtl.dat",
    "snapshot_blob.bin",
    "v8_context_snapshot.bin",
    "libvulkan.so.1",
    "libvk_swiftshader.so",
    "vk_swiftshader_icd.json",
    "libEGL.so",
    "libGLESv2.so",
    "chrome_crashpad_handler",
]
TFJS_FILES = [
    "@tensorflow/tfjs/dist/tf.min.js",
    "@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js",
    "@tensorflow/tfjs-backend-wasm/dist/tf-backend-wasm.min.js",
    "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm",
    "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm",
    "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm",
]
GL_DEBS = ["libvulkan1", "libegl1", "libglvnd0", "libopengl0", "libgl1", "libglx0", "libgles2"]
# glibc's own libraries always come from the machine that runs the browser
SYSTEM_LIBS = ("libc.so", "libm.so", "libpthread", "libdl.so", "librt.so", "ld-linux", "libresolv")
COMMON = [
    "--no-sandbox",
    "--headless",
    "--enable-unsafe-webgpu",
    "--ignore-gpu-blocklist",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--enable-logging=stderr",
    "--window-size=1280,900",
    "--lang=en-US",
]
# tried in order (--flag-sets); the first whose WebGPU adapter is a real GPU times the
# rows. On the lent H200 (driver 580) every Scellis page, builds of earlier days included,
# lost the GPU process under "vulkan" while Dawn opened its device (Skia's own Vulkan
# queue submit failed first); with the page composited in software ("vulkan-swcomp")
# WebGPU still runs on the GPU and nothing was lost, so that set is tried first.
FLAG_SETS = {
    "vulkan": [
        "--use-angle=vulkan",
        "--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan",
        "--disable-vulkan-surface",
    ],
    "vulkan-gl-angle": [
        "--use-gl=angle",
        "--use-angle=vulkan",
        "--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan",
        "--disable-vulkan-surface",
        "--disable-features=SkiaGraphite",
    ],
    "vulkan-plain": ["--use-vulkan", "--enable-features=Vulkan"],
    # WebGPU on Vulkan while the page itself is composited / rasterised in software: tells
    # a device loss caused by the page's drawing from one caused by the engine's kernels
    "vulkan-swcomp": [
        "--use-angle=vulkan",
        "--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan",
        "--disable-vulkan-surface",
        "--disable-gpu-compositing",
    ],
    "vulkan-noraster": [
        "--use-angle=vulkan",
        "--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan",
        "--disable-vulkan-surface",
        "--disable-gpu-rasterization",
    ],
    # Skia on GL (ANGLE over Vulkan) instead of on Vulkan itself; Dawn still on Vulkan
    "angle-skia": [
        "--use-gl=angle",
        "--use-angle=vulkan",
        "--enable-features=VulkanFromANGLE,DefaultANGLEVulkan",
        "--disable-features=Vulkan,SkiaGraphite",
    ],
    "swiftshader": ["--use-webgpu-adapter=swiftshader"],
}
# what Chromium's log says when its GPU process lost the device or died
GPU_LOSS_MARKS = (
    "context lost",
    "Context was lost",
    "GPU process exited unexpectedly",
    "VK_ERROR_DEVICE_LOST",
    "Failed vulkan call",
)
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
FONTS_CONF = """<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>{dir}</dir><cachedir>/tmp/browser-gpu-fc-cache</cachedir></fontconfig>
"""
ICD_CANDIDATES = [
    "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json",
    "/usr/share/vulkan/icd.d/nvidia_icd.json",
    "/etc/vulkan/icd.d/nvidia_icd.json",
    "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.x86_64.json",
]
EGL_CANDIDATES = [
    "/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json",
    "/usr/share/glvnd/egl_vendor.d/10_nvidia.json",
]

# ---------------------------------------------------------------- the pages' scripts

POST_JS = """
const __q = new URLSearchParams(location.search);
function __post(obj) {
  if (__errors.length) obj.page_errors = __errors.slice(0, 5);
  return fetch("/__result?token=" + __q.get("token"),
               {method: "POST", body: JSON.stringify(obj)}).catch(() => {});
}
// page errors go with the result (they need not be fatal); a page that never posts times out
const __errors = [];
window.addEventListener("error", (e) => __errors.push("page error: " + e.message));
window.addEventListener("unhandledrejection",
  (e) => __errors.push("unhandled rejection: " + String(e.reason && e.reason.message || e.reason)));
"""

PROBE_HTML = (
    """<!doctype html><meta charset="utf-8"><title>gpu probe</title><body><script>"""
    + POST_JS
    + """
(async () => {
  const out = {ua: navigator.userAgent, has_gpu: !!navigator.gpu};
  try {
    const a = navigator.gpu &&
      await navigator.gpu.requestAdapter({powerPreference: "high-performance"});
    if (a) {
      const i = a.info || {};
      out.webgpu = {vendor: i.vendor, architecture: i.architecture, device: i.device,
                    description: i.description, fallback: !!i.isFallbackAdapter,
                    f16: a.features.has("shader-f16"),
                    maxBufferSize: a.limits.maxBufferSize};
    } else out.webgpu = null;
  } catch (e) { out.webgpu_error = String(e); }
  try {
    const gl = document.createElement("canvas").getContext("webgl2");
    const ext = gl && gl.getExtension("WEBGL_debug_renderer_info");
    const name = ext ? ext.UNMASKED_RENDERER_WEBGL : gl && gl.RENDERER;
    out.webgl = gl ? gl.getParameter(name) : null;
  } catch (e) { out.webgl_error = String(e); }
  __post(out);
})();
</script>"""
)

# the QLoRA workload (?workload=qlora): Import model, the QLoRA choice, Train, as the
# panels call the worker
QLORA_JS = """
async function __qlora(client, engineMs) {
  const model = __q.get("model"), steps = +__q.get("steps");
  const cfg = JSON.parse(__q.get("cfg"));
  const note = (t) => fetch("/__note?token=" + __q.get("token"), {method: "POST", body: t});
  const out = {impl: "scellis-webgpu-qlora", engine_start_ms: engineMs, steps};
  const tick = () => performance.now();
  let t = tick();
  const names = await (await fetch(`/__files?dir=hf/${model}`)).json();
  const files = [];
  for (const name of names) {
    // a Blob, as a picked file is: the worker mounts it and reads it where the import asks
    const bytes = await (await fetch(`/hf/${model}/${name}`)).blob();
    files.push({path: `${model}/${name}`, bytes});
  }
  out.fetch_s = (tick() - t) / 1e3;
  out.folder_mib = files.reduce((n, f) => n + f.bytes.size, 0) / 2 ** 20;
  note(`fetched ${out.folder_mib.toFixed(1)} MiB in ${out.fetch_s.toFixed(1)} s; importing`);
  t = tick();
  const got = await client.call("import_files", {files, record_text: null});
  files.length = 0;
  out.import_s = (tick() - t) / 1e3;
  out.parameters = got.parameters;
  note(`imported in ${out.import_s.toFixed(1)} s; quantising`);
  const ft = await client.call("edit", {text: got.record,
    edit: {kind: "finetune", method: "qlora", rank: cfg.rank}});
  const text = ft.text + `\\nbatch_size: ${cfg.batch}\\ndata:\\n` +
    "  source: bundled:python_help_topics.txt\\n  format: text\\n  tokenizer: char\\n" +
    `  context: ${cfg.context}\\n  max_chars: 200000\\n  val_fraction: 0.05\\n`;
  // the load and quantisation timed on their own first, in a model dropped before the
  // run (train_only: straight to the run, as the Train button goes)
  if (cfg.load_pause_mib !== undefined) {  // the load alone, giving the browser turns
    Object.assign(out, await client.call("bench_load_paced", {record_text: text,
      pause_mib: cfg.load_pause_mib}));
    note(`loaded in ${out.load_s.toFixed(1)} s, ${out.pauses} pauses`);
    return out;
  }
  if (!cfg.train_only) {
    Object.assign(out, await client.call("bench_quantize", {record_text: text}));
    note(`loaded and quantised in ${out.build_s.toFixed(1)} s; training`);
  }
  const stamps = [], losses = [];
  if (!steps) return out; // --steps 0: the import and the quantisation only
  // the tab's GPU memory budget, typed into its box as a user would (kept for the page's
  // plan too), and passed with train as the Train button passes it
  const budget = cfg.budget ? {budget: cfg.budget} : {};
  if (cfg.budget) {
    out.budget = cfg.budget;
    const box = document.getElementById("run-budget");
    if (box) { box.value = cfg.budget; box.dispatchEvent(new Event("change")); }
  }
  t = tick();
  await client.stream("train", {record_text: text, store: "/scellis/store", max_steps: steps,
    log_every: 1, validate: false, samples: false, drop_last: true, ...budget}, (ev) => {
      if (ev.kind === "plan") Object.assign(out, {plan_verdict: ev.verdict, plan_peak: ev.peak,
        plan_budget: ev.budget, plan_budget_source: ev.budget_source,
        plan_quantized: ev.quantized, plan_parameters: ev.classes.parameters,
        plan_replay_bytes: ev.replay_bytes});
      if (ev.kind === "start") out.to_start_s = (tick() - t) / 1e3;
      if (ev.kind === "log") { stamps.push(tick()); losses.push(ev.loss); }
      // whether the steps replayed, and how many ran eagerly first (the run's end event)
      if (ev.kind === "end") out.replay = ev.replay || null;
    });
  out.first_step_s = stamps.length ? (stamps[0] - t) / 1e3 : null;
  const gaps = stamps.slice(3).map((s, i) => s - stamps[i + 2]).sort((a, b) => a - b);
  out.ms_per_step = gaps.length ? gaps[Math.floor(gaps.length / 2)] : null;
  out.first_loss = losses[0];
  out.last_loss = losses[losses.length - 1];
  out.losses = losses;
  // the engine's own count of device memory, beside what the card reports (CardMemory)
  out.backend_memory = await client.call("bench_device_memory", {});
  return out;
}
"""

SCELLIS_JS = (
    POST_JS
    + QLORA_JS
    + """
(async () => {
  const model = __q.get("model"), steps = +__q.get("steps"), repeats = +__q.get("repeats");
  const replay = __q.get("replay") === "1";
  const shape = JSON.parse(__q.get("shape") || "{}");
  const __text = (id) => {
    const el = document.getElementById(id);
    return el ? el.textContent : "";
  };
  setInterval(() => fetch("/__note?token=" + __q.get("token"), {method: "POST",
    body: `t=${performance.now().toFixed(0)} status=${__text("engine-status")}` +
          ` banner=${__text("banner")}`}), 10000);
  try {
    while (!document.body.dataset.engine) await new Promise((r) => setTimeout(r, 20));
    const engineMs = performance.now();
    fetch("/__note?token=" + __q.get("token"), {method: "POST",
          body: "engine " + document.body.dataset.engine + " at " + engineMs.toFixed(0) + " ms"});
    if (document.body.dataset.engine !== "ready") {
      const st = document.getElementById("engine-status"), b = document.getElementById("banner");
      await __post({error: "engine did not start: " + (st && st.textContent) +
                           " / " + (b && b.textContent),
                    engine_start_ms: engineMs});
      return;
    }
    let r;
    const hello = await window.scellisClient.ready();
    const called = performance.now();
    try {
      if (__q.get("workload") === "qlora") {
        r = await __qlora(window.scellisClient, engineMs);
      } else {
        const args = {model, steps, repeats, replay};
        if (__q.get("shape")) args.shape = shape; // older builds take no shape
        r = await window.scellisClient.call("bench_train_step", args);
        r.first_step_done_ms = called + r.first_step_ms;
      }
    } catch (e) {
      // the error's last lines, before any kernel source a compile error carries
      const text = String(e && e.message || e).split("--- source ---")[0].trimEnd();
      const msg = text.split("\\n").slice(-3).join(" | ");
      r = {impl: replay ? "scellis-webgpu-replay" : "scellis-webgpu", error: msg.slice(0, 400)};
    }
    r.engine_start_ms = engineMs;
    r.boot_marks = hello.boot_marks;
    r.boot_path = hello.boot_path; // {from: "snapshot" | "fresh", snapshot_error}
    await __post(r);
  } catch (e) { await __post({error: String(e && e.message || e)}); }
})();
"""
)

TFJS_JS = (
    POST_JS
    + """
(async () => {
  const cfg = JSON.parse(__q.get("cfg"));
  try {
    const r = await tfjsBench(__q.get("backend"), cfg, +__q.get("steps"), +__q.get("repeats"));
    await __post(r);
  } catch (e) { await __post({error: String(e && e.message || e).slice(0, 400)}); }
})();
"""
)

CONFIGS = {
    "seed_lstm": {"batch": 32, "T": 5, "hidden": 8, "layers": 1, "lr": 0.01},
    "lstm2x64": {"batch": 64, "T": 32, "hidden": 64, "layers": 2, "lr": 1e-3},
}
# the decoder of bench/qlora_plan.py's CONFIG (97.6M parameters), its positions cut to the
# context trained (the imported record's input length is max_position_embeddings)
LLAMA = {
    "model_type": "llama", "hidden_size": 768, "num_attention_heads": 12,
    "num_key_value_heads": 12, "num_hidden_layers": 12, "intermediate_size": 2048,
    "vocab_size": 8192, "rms_norm_eps": 1e-5, "hidden_act": "silu",
    "tie_word_embeddings": False, "rope_theta": 10000.0, "bos_token_id": 0, "eos_token_id": 0,
}  # fmt: skip
QLORA = {
    "qlora100m": {"llama": LLAMA, "context": 256, "batch": 4, "rank": 8},
    # big enough that the NF4 products take the register-tiled kernel under a tab's
    # 32 KiB of workgroup memory (1,024 tokens x 256 x 512), small enough for SwiftShader
    "qlora-mid": {
        "llama": {**LLAMA, "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 4,
                  "num_hidden_layers": 2, "intermediate_size": 512, "vocab_size": 256},
        "context": 256, "batch": 4, "rank": 4,
    },
    # TinyLlama's shape (1.1B parameters): the folder is 2.2 GB in float16. The run types
    # 8 GiB into the tab's GPU memory budget (the target this model is held to), as a
    # user of a card with that much would; its plan is about 2 GiB
    "qlora1b": {
        "llama": {**LLAMA, "hidden_size": 2048, "num_attention_heads": 32,
                  "num_key_value_heads": 4, "num_hidden_layers": 22, "intermediate_size": 5632,
                  "vocab_size": 32000},
        "context": 256, "batch": 1, "rank": 8, "budget": "8GiB",
    },
    "qlora-tiny": {
        "llama": {**LLAMA, "hidden_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2,
                  "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 128},
        "context": 16, "batch": 2, "rank": 4,
    },
}  # fmt: skip
CONFIGS.update(TRANSFORMERS)

# ---------------------------------------------------------------- pack (here)


def _sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def _old_site(rev: str, stage: Path) -> None:
    """The site as commit ``rev`` built it, in ``stage/site_<rev>``: built from a detached
    worktree by that commit's own code, sharing the current build's Pyodide when it is
    the same (a symlink: the payload stays small)."""
    wt = Path(tempfile.mkdtemp(prefix=f"browser-gpu-{rev}-")) / "wt"
    _sh(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(wt), rev],
        capture_output=True)  # fmt: skip
    try:
        (wt / "web" / "node_modules").symlink_to(ROOT / "web" / "node_modules")
        dst = stage / f"site_{rev}"
        env = {**os.environ, "PYTHONPATH": str(wt / "src")}
        # the tab's benchmark commands: a package beside the site's wheel where the
        # commit has one (older commits shipped them inside scellis)
        hooks = wt / "bench" / "tab" / "tabbench"
        extra = ["--extra-package", str(hooks)] if hooks.is_dir() else []
        _sh([sys.executable, "-m", "scellis.cli.main", "site", "build", "--out", str(dst),
             *extra], cwd=wt, env=env)  # fmt: skip
        for m in dst.rglob("*.map"):
            m.unlink()
        mine, theirs = stage / "site" / "pyodide", dst / "pyodide"
        listing = lambda d: sorted((f.name, f.stat().st_size) for f in d.iterdir())  # noqa: E731
        if theirs.is_dir() and listing(mine) == listing(theirs):
            shutil.rmtree(theirs)
            theirs.symlink_to("../site/pyodide")
    finally:
        _sh(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)])


def pack(out: Path, part_mib: int, debs: Path | None, tfjs_modules: Path,
         extra_sites: list[str]) -> int:  # fmt: skip
    """The headless shell's deb travels as it is (already xz, ~61 MiB), split in two; the
    rest (site, tf.js, the few files it needs from chromium-common, libraries, loader debs)
    goes in one gzip tarball with the deb's second part."""
    stage = Path(tempfile.mkdtemp(prefix="browser-gpu-stage-"))
    work = Path(tempfile.mkdtemp(prefix="browser-gpu-debs-"))
    try:
        sys.path.insert(0, str(ROOT / "src"))
        from scellis.cli.main import main as scellis_main

        site = ["site", "build", "--out", str(stage / "site"), "--extra-package", str(TAB_BENCH)]
        if scellis_main(site) != 0:
            raise SystemExit("site build failed")
        for m in (stage / "site").rglob("*.map"):
            m.unlink()
        for rev in extra_sites:
            _old_site(rev, stage)
        tf = stage / "tfjs"
        tf.mkdir(parents=True)
        for f in ("tfjs.html", "tfjs_bench.js", "tfjs_transformer.js"):
            shutil.copy2(ROOT / "bench" / "browser" / f, tf / f)
        for f in TFJS_FILES:
            dst = tf / "node_modules" / f
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(tfjs_modules / f, dst)
        if debs is None:
            debs = work
            _sh(["apt-get", "download", "chromium-headless-shell", "chromium-common"], cwd=work)
        xroot = work / "x"
        for deb in debs.glob("chromium-*.deb"):
            _sh(["dpkg", "-x", str(deb), str(xroot)])
        shell_deb = next(debs.glob("chromium-headless-shell_*.deb"))
        lib = xroot / "usr/lib/chromium"
        dst = stage / CHROME_DIR
        dst.mkdir(parents=True)
        for f in COMMON_FILES:
            shutil.copy2(lib / f, dst / f)
        (stage / "libs").mkdir()
        sonames = set()
        for binary in ("chromium-headless-shell", "libvulkan.so.1"):
            ldd = subprocess.run(["ldd", str(lib / binary)], capture_output=True, text=True).stdout
            for line in ldd.splitlines():
                parts = line.split()
                if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                    if not any(parts[0].startswith(s) for s in SYSTEM_LIBS):
                        sonames.add((parts[0], parts[2]))
        for name, path in sorted(sonames):
            shutil.copy2(os.path.realpath(path), stage / "libs" / name)
        # Skia aborts on a page with text when fontconfig finds no configuration at all
        (stage / "fonts").mkdir()
        shutil.copy2(FONT, stage / "fonts" / Path(FONT).name)
        (stage / "gl").mkdir()
        _sh(["apt-get", "download", *GL_DEBS], cwd=stage / "gl", capture_output=True)
        shutil.copy2(Path(__file__), stage / "browser_gpu.py")
        shutil.copy2(Path(__file__).with_name("browser_workloads.py"), stage)
        shutil.rmtree(out, ignore_errors=True)
        (out / "p1").mkdir(parents=True)
        (out / "p2").mkdir(parents=True)
        data = shell_deb.read_bytes()
        cut = min(len(data), part_mib << 20)
        (out / "p1" / "shell.deb.00").write_bytes(data[:cut])
        (out / "p2" / "shell.deb.01").write_bytes(data[cut:])
        _sh(["tar", "-czf", str(out / "p2" / "rest.tar.gz"), "-C", str(stage), "."])
        for d in ("p1", "p2"):
            mib = sum(f.stat().st_size for f in (out / d).iterdir()) / 2**20
            print(f"{out / d}: {mib:.1f} MiB")
        print(f"libraries bundled: {len(sonames)}")
        return 0
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- run (there)


class Handler(http.server.SimpleHTTPRequestHandler):
    """Static files from the payload root; injects the runner scripts; takes results."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
    }
    results: dict[str, queue.Queue] = {}

    def log_message(self, *a):
        pass

    def _send(self, body: bytes, ctype: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = urlparse(self.path).path
        if path == "/probe.html":
            return self._send(PROBE_HTML.encode(), "text/html; charset=utf-8")
        if path == "/__scellis.js":
            return self._send(SCELLIS_JS.encode(), "text/javascript")
        if path == "/__tfjs.js":
            return self._send(TFJS_JS.encode(), "text/javascript")
        if path == "/__files":  # a folder's files, for a page that imports it whole
            return self._send(json.dumps(self._listing()).encode(), "application/json")
        inject = {"/tfjs/tfjs.html": "/__tfjs.js"}
        top = path.strip("/").split("/")[0]
        if top.startswith("site") and path in (f"/{top}/", f"/{top}/index.html"):
            inject[path] = "/__scellis.js"  # site/ or an older build, site_<rev>/
        if path in inject:
            f = Path(self.directory) / path.lstrip("/")
            f = f / "index.html" if f.is_dir() else f
            html = f.read_text()
            tag = f'<script src="{inject[path]}"></script>'
            html = html.replace("</body>", tag + "</body>") if "</body>" in html else html + tag
            return self._send(html.encode(), "text/html; charset=utf-8")
        return super().do_GET()

    def _listing(self) -> list[str]:
        top = Path(self.directory).resolve()
        folder = (top / parse_qs(urlparse(self.path).query).get("dir", [""])[0]).resolve()
        if top not in folder.parents or not folder.is_dir():
            return []
        return sorted(str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file())

    def do_POST(self):
        u = urlparse(self.path)
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n)
        token = parse_qs(u.query).get("token", [""])[0]
        if u.path == "/__note":
            print(f"  note: {body.decode(errors='replace')[:300]}", flush=True)
        if u.path == "/__result" and token in self.results:
            try:
                self.results[token].put(json.loads(body))
            except ValueError:
                self.results[token].put({"error": "unreadable result: " + body[:200].decode()})
        self._send(b"ok", "text/plain")


def _serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(Handler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def _driver_caches(folder: Path) -> dict:
    """Environment that points the GPU drivers' shader disk caches (NVIDIA's, Mesa's,
    and whatever else follows the XDG cache folder) into ``folder``."""
    cache = folder / "driver-cache"
    return {
        "XDG_CACHE_HOME": str(cache),
        "__GL_SHADER_DISK_CACHE_PATH": str(cache / "nvidia"),
        "MESA_SHADER_CACHE_DIR": str(cache / "mesa"),
    }


class Browser:
    def __init__(self, root: Path, log, env: dict):
        self.chrome = root / CHROME_DIR / "chromium-headless-shell"
        self.log, self.env = log, env

    def visit(self, url: str, flags: list[str], timeout: float, label: str) -> dict:
        """Open ``url`` (a page that posts one result) in a fresh profile; return the result."""
        token = uuid.uuid4().hex
        Handler.results[token] = queue.Queue()
        sep = "&" if "?" in url else "?"
        profile = tempfile.mkdtemp(prefix="browser-gpu-profile-")
        errf = tempfile.TemporaryFile()
        cmd = [str(self.chrome), *COMMON, *flags, f"--user-data-dir={profile}"]
        cmd.append(f"{url}{sep}token={token}")
        t0 = time.perf_counter()
        # the GPU driver's own shader caches live under the profile too: a visit is cold
        # only if no earlier visit's compiled kernels can be found there either
        env = {**self.env, **_driver_caches(Path(profile))}
        proc = subprocess.Popen(
            cmd, stdout=errf, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            r = Handler.results[token].get(timeout=timeout)
        except queue.Empty:
            exited = proc.poll()
            r = {"error": f"no result in {timeout:.0f} s (browser exit code {exited})"}
        r["wall_s"] = round(time.perf_counter() - t0, 2)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        errf.seek(0)
        text = errf.read().decode(errors="replace")
        r["gpu_process_lost"] = any(m in text for m in GPU_LOSS_MARKS)
        lines = [ln for ln in text.splitlines() if ln.strip()]
        self.log.write(f"===== {label} ({len(lines)} lines; first 60, last 40)\n")
        keep = lines if len(lines) <= 100 else lines[:60] + ["..."] + lines[-40:]
        self.log.write("\n".join(keep) + "\n")
        self.log.flush()
        shutil.rmtree(profile, ignore_errors=True)
        Handler.results.pop(token, None)
        return r


def _setup(root: Path, log, install_gl: bool) -> dict:
    """Install the loader debs, link the libraries the machine lacks, find the ICDs."""
    if install_gl:  # the device's recipe: unpack onto / then refresh the linker cache
        for deb in sorted((root / "gl").glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(deb), "/"], check=True)
        subprocess.run(["ldconfig"], check=True)
    have = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    have_names = {ln.split()[0] for ln in have.splitlines()[1:] if ln.strip()}
    missing = root / "libmissing"
    missing.mkdir(exist_ok=True)
    linked = []
    for f in sorted((root / "libs").iterdir()):
        if f.name not in have_names:
            (missing / f.name).unlink(missing_ok=True)
            (missing / f.name).symlink_to(f)
            linked.append(f.name)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(
        p for p in (str(missing), os.environ.get("LD_LIBRARY_PATH", "")) if p
    )
    env.setdefault("HOME", "/tmp")
    env["LANG"] = env["LC_ALL"] = "en_US.UTF-8"  # "C" makes ICU say en-US@posix: app.js throws
    env["LANGUAGE"] = "en_US"
    if (root / "fonts").is_dir():
        conf = root / "fonts" / "fonts.conf"
        conf.write_text(FONTS_CONF.format(dir=root / "fonts"))
        env["FONTCONFIG_FILE"] = str(conf)
    if "VK_DRIVER_FILES" not in env:
        icd = next((c for c in ICD_CANDIDATES if Path(c).is_file()), None)
        if icd:
            env["VK_DRIVER_FILES"] = icd
    if "__EGL_VENDOR_LIBRARY_FILENAMES" not in env:
        egl = next((c for c in EGL_CANDIDATES if Path(c).is_file()), None)
        if egl:
            env["__EGL_VENDOR_LIBRARY_FILENAMES"] = egl
    ldd = subprocess.run(
        ["ldd", str(root / CHROME_DIR / "chromium-headless-shell")],
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    notfound = [ln.strip() for ln in ldd.splitlines() if "not found" in ln]
    info = {
        "linked_from_payload": linked,
        "still_not_found": notfound,
        "VK_DRIVER_FILES": env.get("VK_DRIVER_FILES"),
        "__EGL_VENDOR_LIBRARY_FILENAMES": env.get("__EGL_VENDOR_LIBRARY_FILENAMES"),
    }
    log.write("===== setup\n" + json.dumps(info, indent=1) + "\n")
    print("setup:", json.dumps(info))
    return env


def _llama_config(cfg: dict, context: int, dtype: str) -> dict:
    return {**cfg, "max_position_embeddings": context, "architectures": ["LlamaForCausalLM"],
            "torch_dtype": dtype}  # fmt: skip


def make_llama_folder(folder: Path, cfg: dict, context: int, dtype: str = "float16") -> str:
    """A random-weight Llama folder (config.json, model.safetensors in ``dtype``) as
    transformers saves one; NumPy writes the same layout where transformers is missing.
    Returns what wrote it."""
    config = _llama_config(cfg, context, dtype)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    try:
        import torch
        import transformers
    except ImportError:
        _numpy_llama(folder, config)
        return "numpy (transformers is not installed)"
    torch.manual_seed(0)
    kw = {k: v for k, v in config.items() if k not in ("model_type", "architectures")}
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw))
    model.to(getattr(torch, dtype)).save_pretrained(folder, safe_serialization=True)
    return f"transformers {transformers.__version__}"


def _llama_shapes(c: dict) -> dict[str, tuple]:
    h, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = h // c["num_attention_heads"] * c.get("num_key_value_heads", c["num_attention_heads"])
    shapes = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,),
              "lm_head.weight": (v, h)}  # fmt: skip
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for name, shape in (
            ("self_attn.q_proj", (h, h)), ("self_attn.k_proj", (kv, h)),
            ("self_attn.v_proj", (kv, h)), ("self_attn.o_proj", (h, h)),
            ("mlp.gate_proj", (f, h)), ("mlp.up_proj", (f, h)), ("mlp.down_proj", (h, f)),
            ("input_layernorm", (h,)), ("post_attention_layernorm", (h,)),
        ):  # fmt: skip
            shapes[f"{p}{name}.weight"] = shape
    return shapes


def _numpy_llama(folder: Path, config: dict) -> None:
    import struct

    import numpy as np

    dt, code = (np.float16, "F16") if config["torch_dtype"] == "float16" else (np.float32, "F32")
    rng = np.random.default_rng(0)
    header, at, arrays = {}, 0, []
    for name, shape in _llama_shapes(config).items():
        if len(shape) == 1:  # norms start at one, as transformers' init does
            a = np.ones(shape, dt)
        else:
            a = (0.02 * rng.standard_normal(shape, np.float32)).astype(dt)
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [at, at + a.nbytes]}
        at += a.nbytes
        arrays.append(a)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for a in arrays:
            f.write(a.tobytes())
    (folder / "config.json").write_text(json.dumps(config, indent=1))


class CardMemory:
    """The card's memory in use, sampled by ``nvidia-smi`` every half second in a thread
    while a page runs: the browser's GPU process ends with the page, so its device
    memory can only be read while it lives. Reported against the reading before the
    page opened (other processes on the card are in both); None where there is no
    ``nvidia-smi``. Beside it, the browser's GPU process's resident host memory at its
    largest (``gpu_process_mib_peak``): where WebGPU runs on the CPU (SwiftShader), that
    is the device memory, and on a GPU it holds the uploads' host-side staging."""

    def __init__(self):
        self.base = self.peak = _card_mib()
        self.gpu_process_peak = 0
        self.samples: list[tuple[float, int]] = []  # (seconds since the page opened, MiB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._t0 = time.perf_counter()

    def _sample(self):
        while not self._stop.wait(0.5):
            self.gpu_process_peak = max(self.gpu_process_peak, _gpu_process_mib())
            used = _card_mib()
            if used is not None:
                self.peak = max(self.peak or 0, used)
                self.samples.append((round(time.perf_counter() - self._t0, 1), used))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def report(self) -> dict:
        host = {"gpu_process_mib_peak": self.gpu_process_peak} if self.gpu_process_peak else {}
        if self.base is None:
            return host
        return {**host, "card_mib_before": self.base, "card_mib_peak": self.peak,
                "card_mib_used_by_page": self.peak - self.base,
                "card_mib_timeline": _changes(self.samples)}  # fmt: skip


def _changes(samples: list[tuple[float, int]], step_mib: int = 64) -> list:
    """The samples where the reading moved by at least ``step_mib`` since the last kept
    one, and the last: the shape of the page's memory over time, in a few dozen rows."""
    kept: list[tuple[float, int]] = []
    for t, mib in samples:
        if not kept or abs(mib - kept[-1][1]) >= step_mib:
            kept.append((t, mib))
    if samples and kept[-1] != samples[-1]:
        kept.append(samples[-1])
    return kept


def _gpu_process_mib() -> int:
    """Resident MiB of the browser's GPU process (0 when there is none), read from /proc."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"--type=gpu-process" not in (proc / "cmdline").read_bytes():
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
        except (OSError, ValueError, IndexError):
            continue
    return 0


def _card_mib() -> int | None:
    """MiB in use on the first GPU, or None without nvidia-smi."""
    try:
        text = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout  # fmt: skip
        return int(text.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def _qlora_row(b: Browser, url: str, root: Path, model: str, flags: list[str], a) -> dict:
    w = QLORA[model]
    t0 = time.perf_counter()
    made = make_llama_folder(root / "hf" / model, w["llama"], w["context"], a.qlora_dtype)
    made_s = round(time.perf_counter() - t0, 1)
    print(f"{model}: folder written by {made} in {made_s} s", flush=True)
    keys = ("context", "batch", "rank", "budget")
    cfg = {k: w[k] for k in keys if k in w}
    if a.qlora_train_only:
        cfg["train_only"] = True
    if a.qlora_load_pause_mib is not None:
        cfg["load_pause_mib"] = a.qlora_load_pause_mib
    cfg = json.dumps(cfg, separators=(",", ":"))
    q = f"workload=qlora&model={model}&steps={a.steps}&cfg={cfg}"
    with CardMemory() as card:
        r = b.visit(f"{url}/site/?{q}", flags, a.qlora_timeout, f"{model} qlora")
    r.setdefault("impl", "scellis-webgpu-qlora")
    return {"folder_written_by": made, "folder_dtype": a.qlora_dtype, "folder_s": made_s,
            **card.report(), **r}  # fmt: skip


def _bisect(b: Browser, url: str, root: Path, a, report: dict, out: Path) -> str | None:
    """seed_lstm, replayed, a few steps: on every site build with the first flag set, then
    on the current build under each ``--bisect-flag-sets`` entry. Each row says whether
    Chromium's GPU process was lost. Returns the first of those flag sets that kept it."""
    sets = [f for f in a.bisect_flag_sets.split(",") if f]
    sites = sorted(d.name for d in root.iterdir() if d.is_dir() and d.name.startswith("site_"))
    tries = [("site", f) for f in sets] + [(s, sets[0]) for s in sites]
    q = "model=seed_lstm&steps=5&repeats=2&replay=1"  # its default shape, in every build
    kept = None
    for site, fs in tries:
        r = b.visit(f"{url}/{site}/?{q}", FLAG_SETS[fs], 90, f"bisect {site} {fs}")
        row = {"site": site, "flag_set": fs, **r}
        report.setdefault("bisect", []).append(row)
        print("bisect:", json.dumps(row)[:600], flush=True)
        (out / "results.json").write_text(json.dumps(report, indent=1))
        if site == "site" and kept is None and not r["gpu_process_lost"] and "error" not in r:
            kept = fs
    return kept


def _is_real_gpu(probe: dict) -> bool:
    a = probe.get("webgpu") or {}
    text = " ".join(str(a.get(k, "")) for k in ("vendor", "architecture", "description"))
    return bool(a) and not a.get("fallback") and "swiftshader" not in text.lower()


def _params_agree(rows: list[dict]) -> None:
    """Print each model's parameter count per side: both sides must train the same model."""
    for model in dict.fromkeys(r["model"] for r in rows):
        counts = {r["impl"]: r["params"] for r in rows if r["model"] == model and "params" in r}
        if counts:
            same = "equal" if len(set(counts.values())) == 1 else "DIFFERENT"
            print(
                f"{model}: parameters {same}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items())
            )


def run(a) -> int:
    unknown = [m for m in a.models.split(",") if m not in CONFIGS and m not in QLORA]
    if unknown:
        print(
            f"unknown model(s) {', '.join(unknown)}; known: {', '.join([*CONFIGS, *QLORA])}",
            file=sys.stderr,
        )
        return 2
    root = Path(a.root).resolve()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "chrome_log.txt", "w")
    env = _setup(root, log, not a.no_install_gl)
    httpd, url = _serve(root)
    b = Browser(root, log, env)
    report: dict = {"probes": {}, "rows": [], "steps": a.steps, "repeats": a.repeats}
    try:
        chosen = None
        for name in a.flag_sets.split(","):
            p = b.visit(f"{url}/probe.html", FLAG_SETS[name], 60, f"probe {name}")
            report["probes"][name] = p
            print(f"probe {name}: {json.dumps(p)}", flush=True)
            if _is_real_gpu(p):
                chosen = name
                break
        if chosen is None and not a.allow_cpu:
            print("no flag set gave a real GPU adapter: nothing timed")
            return 1
        chosen = chosen or "swiftshader"
        report["flag_set"] = chosen
        report["flags"] = COMMON + FLAG_SETS[chosen]
        if a.bisect_flag_sets:
            chosen = _bisect(b, url, root, a, report, out) or chosen
            report["flag_set"] = chosen
            report["flags"] = COMMON + FLAG_SETS[chosen]
        flags = FLAG_SETS[chosen]
        for model in a.models.split(","):
            if model in QLORA:
                row = {"model": model, **_qlora_row(b, url, root, model, flags, a)}
                report["rows"].append(row)
                print(json.dumps(row), flush=True)
                (out / "results.json").write_text(json.dumps(report, indent=1))
                continue
            for impl in a.impls.split(","):
                cfg, shape = sized(CONFIGS[model], model, a.tiny)
                if impl in ("scellis", "scellis-replay"):  # eager, or the recorded schedule
                    rep = int(impl == "scellis-replay")
                    q = f"model={model}&steps={a.steps}&repeats={a.repeats}&replay={rep}"
                    q += "&shape=" + quote(json.dumps(shape, separators=(",", ":")))
                    r = b.visit(f"{url}/site/?{q}", flags, a.timeout, f"{model} {impl}")
                    r.setdefault("impl", "scellis-webgpu-replay" if rep else "scellis-webgpu")
                else:
                    cfg = quote(json.dumps(cfg, separators=(",", ":")))
                    q = f"backend={impl}&steps={a.steps}&repeats={a.repeats}&cfg={cfg}"
                    r = b.visit(f"{url}/tfjs/tfjs.html?{q}", flags, a.timeout, f"{model} {impl}")
                    r["impl"] = f"tfjs-{impl}"
                row = {"model": model, **r}
                report["rows"].append(row)
                print(json.dumps(row), flush=True)
                (out / "results.json").write_text(json.dumps(report, indent=1))
    finally:
        httpd.shutdown()
        log.close()
        (out / "results.json").write_text(json.dumps(report, indent=1))
    for r in report["rows"]:
        if r["model"] in QLORA and "error" not in r and "ms_per_step" not in r:
            built = r.get("build_s", r.get("load_s", 0))
            print(f"{r['model']:<10} import {r['import_s']:.1f} s, load (and quantise)",
                  f"{built:.1f} s")  # fmt: skip
        elif r["model"] in QLORA and "error" not in r:
            held = (r.get("backend_memory") or {}).get("held_peak_bytes", 0) / 2**20
            print(
                f"{r['model']:<10} import {r['import_s']:.1f} s, "
                + (f"load and quantise {r['build_s']:.1f} s, " if "build_s" in r else "")
                + f"{r['ms_per_step']} ms/step, "
                f"loss {r['first_loss']:.4f} -> {r['last_loss']:.4f}, "
                f"plan peak {r['plan_peak'] / 2**20:.1f} MiB, replay {r.get('replay')}, "
                f"card memory used by the page {r.get('card_mib_used_by_page')} MiB, "
                f"engine's held peak {held:.0f} MiB, "
                f"GPU process {r.get('gpu_process_mib_peak')} MiB"
            )
        elif "error" in r:
            print(f"{r['model']:<10} {r['impl']:<15} {r['error']}")
        else:
            start = r.get("engine_start_ms")
            extra = f"  engine start {start:7.0f} ms" if start is not None else ""
            if r.get("first_step_done_ms") is not None:
                extra += f"  first step done {r['first_step_done_ms']:7.0f} ms after navigation"
            if r.get("params") is not None:
                extra += f"  params {r['params']:,}"
            print(
                f"{r['model']:<10} {r['impl']:<15} {r['ms_per_step']:9.3f} ms/step   "
                f"first step {r['first_step_ms']:8.0f} ms{extra}"
            )
    _params_agree(report["rows"])
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="build the payload here")
    p.add_argument("--out", required=True)
    p.add_argument("--part-mib", type=int, default=46, help="size of the deb's first part")
    p.add_argument("--debs", help="a folder with the two chromium debs (else apt-get download)")
    p.add_argument("--tfjs-modules", default=str(ROOT / "bench" / "browser" / "node_modules"))
    p.add_argument("--extra-sites", default="", help="commits whose site builds go along too "
                   "(site_<rev>/), for telling which change broke a page on the GPU")  # fmt: skip
    r = sub.add_parser("run", help="time the rows on this machine (the payload unpacked)")
    r.add_argument("--root", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--models", default="seed_lstm,lstm2x64")
    r.add_argument("--impls", default="scellis,scellis-replay,webgpu,webgl,wasm")
    r.add_argument("--flag-sets", default="vulkan-swcomp,vulkan,vulkan-gl-angle,vulkan-plain")
    r.add_argument("--allow-cpu", action="store_true", help="time on SwiftShader if no GPU")
    r.add_argument("--no-install-gl", action="store_true", help="leave / alone (local tries)")
    r.add_argument("--steps", type=int, default=20)
    r.add_argument("--repeats", type=int, default=5)
    r.add_argument("--timeout", type=float, default=180)
    r.add_argument("--qlora-timeout", type=float, default=480, help="seconds for a QLoRA page")
    r.add_argument("--qlora-dtype", choices=("float16", "float32"), default="float16",
                   help="the dtype the Hugging Face folder is saved in")  # fmt: skip
    r.add_argument(
        "--qlora-load-pause-mib",
        type=int,
        default=None,
        help="only load the weights, letting the browser run every N MiB (0: never)",
    )
    r.add_argument("--qlora-train-only", action="store_true",
                   help="no separate load and quantisation timing before the run")  # fmt: skip
    r.add_argument("--tiny", action="store_true", help="every model at its smoke-check size")
    r.add_argument("--bisect-flag-sets", default="",
                   help="first load seed_lstm on every site build (site_<rev>/ too) and on the "
                   "current one under each of these flag sets; the rows then use the first "
                   "flag set that kept the GPU process")  # fmt: skip
    a = ap.parse_args()
    if a.cmd == "pack":
        debs = Path(a.debs) if a.debs else None
        extra = [r for r in a.extra_sites.split(",") if r]
        return pack(Path(a.out), a.part_mib, debs, Path(a.tfjs_modules), extra)
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
