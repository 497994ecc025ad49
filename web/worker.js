// The engine's Web Worker: loads Pyodide from the site (never a CDN), installs the scellis
// wheel and its pure-Python dependencies from local files, opens WebGPU, and answers
// messages {id, cmd, args} by calling scellis.webapp.api.<cmd>(**args):
//   plain value      -> {id, result}
//   async generator  -> {id, event} per item, then {id, result: last item or null}
//   ScellisError     -> {id, error: {message, diagnostics}}
// Messages {control: {...}} go to api.control(...) at once, even while a command runs
// (the Python side awaits GPU readbacks, so the worker's event loop keeps turning).
import { loadPyodide } from "./pyodide/pyodide.mjs";

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

function writeImport(files) {
  wipe(IMPORTS);
  const root = `${IMPORTS}/${++imports}`;
  for (const f of files) {
    // a relative path from the picker: no way out of the folder, whatever it says
    const parts = String(f.path).split("/").filter((p) => p && p !== "." && p !== "..");
    if (!parts.length) continue;
    pyodide.FS.mkdirTree([root, ...parts.slice(0, -1)].join("/"));
    pyodide.FS.writeFile([root, ...parts].join("/"), new Uint8Array(f.bytes));
  }
  pyodide.FS.mkdirTree(root);
  return root;
}

// worker-side commands that prepare the engine's call: (args) -> [cmd, args]
const PREPARED = {
  import_files: (a) => ["import_model", { folder: writeImport(a.files || []), record_text: a.record_text }],
};

const STORE_COMMANDS = { release_store: releaseStore, take_store: takeStore };

// commands that never write under /scellis (a sync of the store costs a frame or more)
const READ_ONLY = new Set(["project", "edit", "catalog", "use_info", "predict", "forward", "labels"]);

function flush() {
  if (!persistent) return flushing;
  flushing = flushing.then(() => syncfs(false)).catch((e) => {
    status(`could not save runs to browser storage: ${(e && e.message) || e}`);
  });
  return flushing;
}

async function boot() {
  const t0 = performance.now();
  if (!self.navigator.gpu) throw new Error(NO_WEBGPU);
  // an adapter is asked for before Pyodide loads so a missing one is said at once;
  // Python opens its own (scellis.devices.browser.open_gpu, same wording)
  if (!(await self.navigator.gpu.requestAdapter())) throw new Error(NO_ADAPTER);
  status("loading Python (Pyodide)…");
  pyodide = await loadPyodide({ indexURL: new URL("./pyodide/", self.location.href).href });
  const manifest = await (await fetch("./wheels/manifest.json")).json();
  status("installing the scellis wheel…");
  for (const name of manifest.wheels) {
    // a wheel is a zip laid out as site-packages: unpacking it is installing it
    pyodide.unpackArchive(await fetchBytes(`./wheels/${name}`), "wheel");
  }
  await mountStore();
  status("opening WebGPU…");
  pyodide.globals.set("_pyodide_module", pyodide);
  api = await pyodide.runPythonAsync(`
from scellis.devices import browser as _browser
await _browser.install()
import scellis.webapp.api as _api
_api
`);
  // the event kinds after which the store is written back (the engine's schema says)
  const defs = toJs(api.dispatch("event_schema", "{}")).$defs;
  for (const [kind, def] of Object.entries(defs)) if (def["x-persist"]) PERSIST_KINDS.add(kind);
  // the data files pinned before a reload, back where the restored drafts name them
  const restored = toJs(api.dispatch("restore_data", "{}"));
  const hello = api.hello().toJs({ dict_converter: Object.fromEntries });
  hello.restored_data = restored;
  hello.persistent = persistent;
  hello.boot_ms = performance.now() - t0;
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
        if (last && PERSIST_KINDS.has(last.kind)) await flush();
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
