// Build step of `scellis site build` (run by node, never shipped): a memory snapshot of
// the shipped Pyodide with the wheels installed and the engine's modules imported, so
// the tab restores an interpreter that has already started and imported scellis instead
// of doing both in WebAssembly at each start.
//   node make_snapshot.mjs PYODIDE_DIR OUT_BIN MODULES ARCHIVE...
// MODULES is a comma-separated list of modules to import; each ARCHIVE is unpacked as the
// worker unpacks it (".whl" as a wheel, anything else as a zip), in the order given.
//
// A snapshot is the interpreter's WebAssembly memory and nothing else: the file system
// (the wheels' files) lives in JavaScript and is not in it, so the worker still unpacks
// the wheels (a module imported later, package data). Python must hold no JavaScript
// object when it is taken beyond the globals it reaches by name (`import js`), so the
// modules imported here must not touch the browser at import.
import nodeCrypto from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";

const [pyodideDir, outBin, modules, ...archives] = process.argv.slice(2);
// Two builds of the same files give the same snapshot (and the same service worker cache
// name, so a rebuild costs returning visitors no new download): the interpreter sees a
// fixed clock (file times, time.time()) and a fixed stream of random bytes while it is
// made; the worker reseeds what kept random state after a restore
const EPOCH = Date.UTC(2020, 0, 1);
Date.now = () => EPOCH;
let ticks = 0;
performance.now = () => ++ticks; // a millisecond a call: time moves, the same way each build
let counter = 0;
function fill(view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (counter++ * 2654435761) >>> 24;
  return view;
}
nodeCrypto.randomFillSync = fill;
globalThis.crypto.getRandomValues = fill;
const { loadPyodide } = await import(`${pyodideDir}/pyodide.mjs`);
const py = await loadPyodide({
  indexURL: `${pyodideDir}/`,
  _makeSnapshot: true,
  env: { PYTHONHASHSEED: "0" },
});
for (const a of archives) {
  py.unpackArchive(new Uint8Array(readFileSync(a)), a.endsWith(".whl") ? "wheel" : "zip");
}
py.runPython(`
import importlib, sys
for _name in ${JSON.stringify(modules.split(",").filter(Boolean))}:
    importlib.import_module(_name)
# loadPyodide puts the working folder first on sys.path again after a restore
if sys.path and sys.path[0] == "":
    del sys.path[0]
del _name, importlib, sys
`);
writeFileSync(outBin, py.makeMemorySnapshot());
