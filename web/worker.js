// The engine's Web Worker: loads Pyodide from the site (never a CDN), installs the scellis
// wheel and its pure-Python dependencies from local files, opens WebGPU, and answers
// messages {id, cmd, args} by calling scellis.webapp.api.<cmd>(**args):
//   plain value      -> {id, result}
//   async generator  -> {id, event} per item, then {id, result: last item or null}
//   ScellisError     -> {id, error: {message, diagnostics}}
// Messages {control: {...}} go to api.control(...) at once, even while a command runs
// (the Python side awaits GPU readbacks, so the worker's event loop keeps turning).

// the start-up's steps as performance marks (seen in the browser's profiler), kept with
// their absolute times so the page can place them after its own navigation start
const bootMarks = [];
function mark(name) {
  performance.mark(name);
  bootMarks.push([name, performance.timeOrigin + performance.now()]);
}
mark("worker:start");
// Pyodide's loader is imported at once, not as a static import, so that the GPU and the
// wheels are asked for while it loads: the start-up is as long as its slowest part
const pyodideModule = import("./pyodide/pyodide.mjs");

let api = null;
const PERSIST_KINDS = new Set(); // filled from the engine's event schema at boot
let pyodide = null;
const queue = []; // messages that arrive before the engine is ready

function post(msg) { self.postMessage(msg); }
function status(text) { post({ status: text }); }

async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`could not load ${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

// said before Pyodide loads (seconds): the same words as scellis.devices.browser's
const NO_WEBGPU =
  "This browser gives the page no WebGPU (navigator.gpu is missing in a Web Worker). " +
  "Scellis trains on WebGPU: use a recent Chrome, Edge or Firefox with WebGPU enabled " +
  "(Chrome/Edge 113+; on Linux start Chromium with --enable-unsafe-webgpu), served " +
  "from https or localhost.";
const NO_ADAPTER =
  "WebGPU is present but navigator.gpu.requestAdapter() found no GPU adapter " +
  "(the GPU may be blocklisted or disabled; check chrome://gpu).";

// the persistent folder: IDBFS keeps /scellis in IndexedDB. It is loaded once at boot
// and written back after every checkpoint, at a run's end and after each command, one
// flush at a time (the run store under /scellis/store is the native store's layout)
const PERSIST = "/scellis";
let persistent = false;
let flushing = Promise.resolve();

function syncfs(populate) {
  return new Promise((res, rej) => pyodide.FS.syncfs(populate, (e) => (e ? rej(e) : res())));
}

// one tab at a time owns the store: IDBFS copies the whole folder into each tab's memory
// and writes it back whole, so two writers would overwrite each other's runs (and a
// second tab would take the first one's live run for a dead one). The lock is held
// until the worker ends or hands the store over (release_store: a detached run window
// takes it with take_store, which waits for the lock); a tab that cannot take it at
// boot keeps its runs for itself only.
let releaseLock = null; // ends the held lock's callback, which frees the lock

function lockStore(wait) {
  if (!self.navigator.locks) return Promise.resolve(true);
  return new Promise((res) => {
    self.navigator.locks.request("scellis-store", wait ? {} : { ifAvailable: true }, (lock) => {
      res(lock !== null);
      return lock ? new Promise((done) => { releaseLock = done; }) : null;
    });
  });
}

// what a tab wrote under /scellis while it did not own the store (memory only) must not
// shadow or mix with the store it mounts
function wipe(path) {
  const FS = pyodide.FS;
  if (!FS.analyzePath(path).exists) return;
  for (const name of FS.readdir(path)) {
    if (name === "." || name === "..") continue;
    const p = `${path}/${name}`;
    if (FS.isDir(FS.stat(p).mode)) { wipe(p); FS.rmdir(p); } else FS.unlink(p);
  }
}

async function openStore() {
  try {
    pyodide.FS.mkdirTree(PERSIST);
    wipe(PERSIST);
    pyodide.FS.mount(pyodide.FS.filesystems.IDBFS, {}, PERSIST);
    await syncfs(true);
    persistent = true;
  } catch (e) {
    // no IndexedDB (a private window may refuse it): runs are kept for this tab only
    status(`no persistent storage (${(e && e.message) || e}); runs last this tab only`);
  }
}

async function mountStore() {
  if (!(await lockStore(false))) {
    status("another tab holds this site's run store; runs of this tab are not kept");
    return;
  }
  await openStore();
}

// the store handover, between this worker's commands (never during a run: the page asks
// only between runs): write everything back, unmount, let the lock go
async function releaseStore() {
  await flush();
  const had = persistent || releaseLock !== null;
  if (persistent) {
    pyodide.FS.unmount(PERSIST);
    persistent = false;
    wipe(PERSIST);
  }
  if (releaseLock) { releaseLock(); releaseLock = null; }
  return { released: had };
}

// wait for the lock (the other window holds it until it releases or closes), then mount
// the store as it was written back
async function takeStore() {
  if (!releaseLock) await lockStore(true);
  if (!persistent) await openStore();
  // runs still marked running before now were another worker's (see tab_store)
  toJs(api.dispatch("store_taken", "{}"));
  toJs(api.dispatch("restore_data", "{}")); // the pinned files the store kept
  return { persistent };
}

// Import model: the picked files ({path, bytes}; a folder's files with their relative
// paths) are written under a fresh folder of the in-memory file system (the last import's
// is removed first), and the engine imports that folder (webapp/import_api.py)
const IMPORTS = "/tmp/import";
let imports = 0;

let mountedImport = null;

// The picked files, mounted read-only under a fresh folder: each is a Blob (the page's
// File itself, or its bytes wrapped), read on demand where the engine reads it, so a
// model of gigabytes is never copied whole into the engine's 4 GiB of memory.
function writeImport(files) {
  const FS = pyodide.FS;
  if (mountedImport) {
    FS.unmount(mountedImport);
    mountedImport = null;
  }
  wipe(IMPORTS);
  const root = `${IMPORTS}/${++imports}`;
  const blobs = [];
  for (const f of files) {
    // a relative path from the picker: no way out of the folder, whatever it says
    const parts = String(f.path).split("/").filter((p) => p && p !== "." && p !== "..");
    if (!parts.length) continue;
    blobs.push({ name: parts.join("/"), data: f.bytes instanceof Blob ? f.bytes : new Blob([f.bytes]) });
  }
  FS.mkdirTree(root);
  FS.mount(FS.filesystems.WORKERFS, { blobs }, root);
  mountedImport = root;
  return root;
}

// worker-side commands that prepare the engine's call: (args) -> [cmd, args]
const PREPARED = {
  import_files: (a) => ["import_model", { folder: writeImport(a.files || []), record_text: a.record_text }],
};

const STORE_COMMANDS = { release_store: releaseStore, take_store: takeStore };

// commands that never write under /scellis (a sync of the store costs a frame or more):
// the engine's command registry says which, in its hello at boot; any other is synced
let READ_ONLY = new Set();

// a run's latest steps are written back every few seconds too, not only at checkpoints:
// a tab closed or reloaded mid-run then lists the step it had reached, near enough
const STEPS_FLUSH_MS = 10_000;
let stepsFlushed = 0;
function stepsDue() {
  const now = performance.now();
  if (now - stepsFlushed < STEPS_FLUSH_MS) return false;
  stepsFlushed = now;
  return true;
}

// Files too large for browser storage (a put of GiB fails "out of memory", and failed the
// whole write-back, every time): the engine says which to leave out
// (webapp/session_files.py), and IDBFS's lists of both sides are filtered by it, so they
// stay in this tab's memory only while everything else is written back. Filtering the
// stored side too means a copy written back before a file was left out is neither
// replaced nor deleted: leaving a file out never loses what was saved.
let leftOut = new Set();

function filterWriteBack() {
  const idbfs = pyodide.FS.filesystems.IDBFS;
  for (const name of ["getLocalSet", "getRemoteSet"]) {
    const whole = idbfs[name];
    idbfs[name] = (mount, callback) => whole(mount, (err, set) => {
      if (!err) for (const path of leftOut) delete set.entries[path];
      callback(err, set);
    });
  }
}

// ask the engine which files to leave out; failed: the last write-back failed, so the
// largest file still written back goes too. Its lines for the user (each said once).
function leaveOut(failed) {
  if (!api) return [];
  try {
    const got = toJs(api.dispatch("unsaved_files", JSON.stringify({ failed })));
    leftOut = new Set(got.skip);
    return [...got.say, ...got.gone];
  } catch (e) {
    return []; // the write-back goes on with the last list
  }
}

let saveFailed = false; // said in the status line until a write-back succeeds again

async function writeBack() {
  const said = leaveOut(false);
  if (said.length) status(said.join(" · "));
  try {
    await syncfs(false);
  } catch (first) {
    // no path in the error: the likeliest cause is one file too large for a put, so
    // the largest one is left out from now on and the write-back tried once more
    const more = leaveOut(true);
    try {
      await syncfs(false);
      if (more.length) status(more.join(" · "));
    } catch (e) {
      saveFailed = true;
      status(`could not save runs to browser storage: ${(e && e.message) || e}`);
      return;
    }
  }
  if (saveFailed) {
    saveFailed = false;
    status("runs saved to browser storage again");
  }
}

function flush() {
  if (!persistent) return flushing;
  flushing = flushing.then(writeBack).catch((e) => {
    status(`could not save runs to browser storage: ${(e && e.message) || e}`);
  });
  return flushing;
}

// the device limits asked for: the adapter's own for these (the backend reads them), as
// scellis.devices.browser.device_descriptor asks when Python opens the device itself
const DEVICE_LIMITS = [
  "maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupsPerDimension",
  "maxStorageBuffersPerShaderStage", "maxComputeWorkgroupSizeX",
];

async function openGpu() {
  if (!self.navigator.gpu) throw new Error(NO_WEBGPU);
  const adapter = await self.navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) throw new Error(NO_ADAPTER);
  mark("gpu:adapter");
  const requiredLimits = {};
  for (const k of DEVICE_LIMITS) if (adapter.limits[k] !== undefined) requiredLimits[k] = adapter.limits[k];
  // each feature only where the adapter has it: asking for an absent one fails the request
  const requiredFeatures = ["shader-f16", "subgroups"].filter((f) => adapter.features.has(f));
  try {
    const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
    mark("gpu:device");
    return { adapter, device };
  } catch (e) {
    return { adapter, device: null }; // Python asks again and says what failed
  }
}

// the wheels' manifest is asked for at once: it says whether the site has a snapshot
const manifestPromise = fetch("./wheels/manifest.json").then((r) => {
  if (!r.ok) throw new Error(`could not load ./wheels/manifest.json: HTTP ${r.status}`);
  return r.json();
});

async function fetchWheels(manifest) {
  const get = (name) => fetchBytes(`./wheels/${name}`);
  const [wheels, bytecode] = await Promise.all([
    Promise.all(manifest.wheels.map(get)),
    manifest.bytecode ? get(manifest.bytecode) : null,
  ]);
  mark("wheels:fetched");
  return { wheels, bytecode };
}

// A zip's files written into Pyodide's working folder, where pyodide.unpackArchive puts
// them (the folder is first on sys.path), by JavaScript: the site build stores every
// archive's members uncompressed, so unpacking is copying, with no Python (zipfile,
// shutil) run in WebAssembly for it. An archive this reader does not take (a compressed
// member, zip64) goes to unpackArchive.
function unpack(zip) {
  const entries = storedEntries(zip);
  if (!entries) { pyodide.unpackArchive(zip, "zip"); return; }
  const FS = pyodide.FS;
  for (const { name, bytes } of entries) {
    const parts = name.split("/").filter((p) => p && p !== "." && p !== "..");
    if (!parts.length) continue;
    if (name.endsWith("/")) { FS.mkdirTree(parts.join("/")); continue; }
    if (parts.length > 1) FS.mkdirTree(parts.slice(0, -1).join("/"));
    FS.writeFile(parts.join("/"), bytes, { canOwn: true });
  }
}

// [{name, bytes}] from the zip's central directory; null unless every member is stored
function storedEntries(zip) {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let end = zip.length - 22; // the end record: 22 bytes and a comment of at most 64 KiB
  while (end >= 0 && view.getUint32(end, true) !== 0x06054b50) end--;
  if (end < 0) return null;
  const count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  const names = new TextDecoder();
  const out = [];
  for (let i = 0; i < count; i++) {
    if (view.getUint32(at, true) !== 0x02014b50) return null;
    const method = view.getUint16(at + 10, true);
    const size = view.getUint32(at + 20, true);
    const nameLen = view.getUint16(at + 28, true);
    const local = view.getUint32(at + 42, true);
    if (method !== 0 || size === 0xffffffff || local === 0xffffffff) return null;
    const name = names.decode(zip.subarray(at + 46, at + 46 + nameLen));
    // the data follows the local header, whose name and extra field have their own lengths
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    out.push({ name, bytes: zip.subarray(start, start + size) });
    at += 46 + nameLen + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return out;
}

// The snapshot is read into a buffer of the size the manifest gives, while Pyodide
// compiles its WebAssembly: Pyodide asks for the snapshot before it compiles, but reads
// only its length then, and its bytes once the module is ready to run, which waits (an
// Emscripten run dependency) until the buffer is full. A snapshot that fails to arrive
// leaves a buffer with no header, which Pyodide refuses, so boot starts afresh.
async function readSnapshot(entry, into) {
  const r = await fetch(`./wheels/${entry.file}`);
  if (!r.ok) throw new Error(`could not load ./wheels/${entry.file}: HTTP ${r.status}`);
  const body = entry.gzip ? r.body.pipeThrough(new DecompressionStream("gzip")) : r.body;
  const reader = body.getReader();
  let at = 0;
  for (let part = await reader.read(); !part.done; part = await reader.read()) {
    if (at + part.value.length > into.length) throw new Error("the snapshot is longer than listed");
    into.set(part.value, at);
    at += part.value.length;
  }
  if (at !== into.length) throw new Error("the snapshot is shorter than listed");
  mark("snapshot:fetched");
}

// Pyodide's loader takes the function that makes its Emscripten module; this one makes it
// wait for the snapshot's bytes, and grows its memory to the snapshot's size first (this
// build's module makes its memory at its own initial size, too small for a snapshot)
async function snapshotModule(snapshot, arrived) {
  const create = (await import("./pyodide/pyodide.asm.mjs")).default;
  return (settings) => {
    settings.preRun.push((module) => {
      mark("pyodide:instantiated");
      module.growMemory(snapshot.length);
      module.addRunDependency("scellis-snapshot");
      arrived.then(() => module.removeRunDependency("scellis-snapshot"));
    });
    return create(settings);
  };
}

// The interpreter: restored from the site build's memory snapshot (Python started, the
// engine's modules imported) when the site has one, else started afresh; a snapshot that
// cannot be fetched or restored costs the fresh start it would have saved, no more
const bootPath = { from: "fresh", snapshot_error: null };

async function startPyodide(manifest) {
  const entry = manifest.snapshot;
  const snapshot = entry ? new Uint8Array(entry.bytes) : null;
  const arrived = entry && readSnapshot(entry, snapshot).catch((e) => {
    snapshot.fill(0, 0, 64);
    bootPath.snapshot_error = (e && e.message) || String(e);
  });
  const { loadPyodide } = await pyodideModule;
  mark("pyodide:module");
  const indexURL = new URL("./pyodide/", self.location.href).href;
  if (entry) {
    try {
      const createPyodideModule = await snapshotModule(snapshot, arrived);
      const py = await loadPyodide({ indexURL, _loadSnapshot: snapshot, createPyodideModule });
      bootPath.from = "snapshot";
      mark("pyodide:loaded");
      return py;
    } catch (e) {
      bootPath.snapshot_error ??= (e && e.message) || String(e);
      console.warn(`scellis: starting Python without the snapshot (${bootPath.snapshot_error})`);
    }
  }
  const py = await loadPyodide({ indexURL });
  mark("pyodide:loaded");
  return py;
}

async function boot() {
  const t0 = performance.now();
  // all three start now; a missing WebGPU or adapter is said as soon as it is known,
  // without waiting for Python
  const gpu = openGpu();
  const files = manifestPromise.then(fetchWheels);
  const python = manifestPromise.then(startPyodide);
  for (const p of [files, python]) p.catch(() => {}); // awaited below, or boot failed first
  status("loading Python (Pyodide)…");
  const [opened, py] = await Promise.all([gpu, python]);
  pyodide = py;
  status("installing the scellis wheel…");
  const { wheels, bytecode } = await files;
  // a wheel is a zip laid out as site-packages: unpacking it is installing it; the
  // bytecode goes next to the sources it was compiled from
  for (const z of bytecode ? [...wheels, bytecode] : wheels) unpack(z);
  mark("wheels:installed");
  filterWriteBack();
  await mountStore();
  mark("store:mounted");
  status("opening WebGPU…");
  pyodide.globals.set("_pyodide_module", pyodide);
  pyodide.globals.set("_gpu_adapter", opened.adapter);
  pyodide.globals.set("_gpu_device", opened.device);
  await pyodide.runPythonAsync("from scellis.devices import browser as _browser");
  mark("python:device-module");
  await pyodide.runPythonAsync("await _browser.install(_gpu_adapter, _gpu_device)");
  mark("python:device-installed");
  api = await pyodide.runPythonAsync("import scellis.webapp.api as _api\n_api");
  // packages the site build carried beside scellis (the benchmark hooks): imported before
  // hello, so the commands they register are listed there
  for (const name of (await manifestPromise).imports || []) pyodide.pyimport(name).destroy();
  // this worker's start, for the state a snapshot's imports fixed at the site build
  api.started();
  mark("python:api");
  // the event kinds after which the store is written back (the engine's schema says)
  const defs = toJs(api.dispatch("event_schema", "{}")).$defs;
  for (const [kind, def] of Object.entries(defs)) if (def["x-persist"]) PERSIST_KINDS.add(kind);
  // the data files pinned before a reload, back where the restored drafts name them
  const restored = toJs(api.dispatch("restore_data", "{}"));
  const hello = api.hello().toJs({ dict_converter: Object.fromEntries });
  READ_ONLY = new Set(hello.read_only);
  hello.restored_data = restored;
  hello.persistent = persistent;
  // what an earlier tab kept in memory only and this reload lost, said once
  hello.storage_notes = persistent ? leaveOut(false) : [];
  hello.boot_ms = performance.now() - t0;
  hello.boot_path = bootPath;
  mark("engine:ready");
  hello.boot_marks = bootMarks;
  return hello;
}

function toJs(v) {
  if (v && typeof v.toJs === "function") {
    const out = v.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
    v.destroy();
    return out;
  }
  return v;
}

function errorOf(e) {
  // a ScellisError raised in Python arrives as a PythonError; api.last_error() holds its
  // message and located diagnostics so the page shows one clear line, not a traceback
  if (api) {
    const known = toJs(api.last_error());
    if (known) return known;
  }
  return { message: (e && e.message) || String(e), diagnostics: [], type: e && e.type };
}

async function handle(msg) {
  let { id, cmd, args } = msg;
  if (STORE_COMMANDS[cmd]) {
    STORE_COMMANDS[cmd]().then(
      (result) => post({ id, result }),
      (e) => post({ id, error: { message: `${cmd}: ${(e && e.message) || e}`, diagnostics: [] } }),
    );
    return;
  }
  try {
    if (PREPARED[cmd]) [cmd, args] = PREPARED[cmd](args || {});
    // arguments cross as JSON so nested values arrive as Python dicts/lists, not proxies
    let out = api.dispatch(cmd, JSON.stringify(args || {}));
    if (out && typeof out.then === "function") out = await out;
    if (out && out.type === "async_generator") {
      let last = null;
      while (true) {
        let item;
        try { item = await out.__anext__(); } catch (e) {
          if (e && e.type === "StopAsyncIteration") break;
          throw e;
        }
        last = toJs(item);
        if (last && (PERSIST_KINDS.has(last.kind) || (last.kind === "log" && stepsDue()))) await flush();
        post({ id, event: last });
      }
      out.destroy();
      await flush();
      post({ id, result: last });
    } else {
      const result = toJs(out);
      // Model View's edits and projections write nothing: no store sync on their way back
      if (!READ_ONLY.has(cmd)) await flush();
      post({ id, result });
    }
  } catch (e) {
    await flush(); // a failed run's last rows (status failed) are kept too
    post({ id, error: errorOf(e) });
  }
}

self.onmessage = (ev) => {
  const msg = ev.data;
  if (msg.control) {
    if (api) api.control(JSON.stringify(msg.control));
    return;
  }
  if (!api) { queue.push(msg); return; }
  handle(msg);
};

boot().then(
  (hello) => {
    post({ ready: hello });
    for (const m of queue.splice(0)) handle(m);
  },
  (e) => {
    const message = (e && e.message) || String(e);
    post({ fatal: { message, no_webgpu: message.includes("WebGPU") } });
  },
);
