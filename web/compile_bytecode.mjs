// Build step of `scellis site build` (run by node, never shipped): compiles the wheels'
// Python modules to bytecode with the very Pyodide the site ships, so the tab imports
// .pyc files instead of compiling every module's source in WebAssembly at each start.
//   node compile_bytecode.mjs PYODIDE_DIR OUT_ZIP WHEEL...
// The .pyc files are "unchecked-hash" ones (PEP 552): unpacking gives the sources new
// modification times, which must not make Python ignore them. OUT_ZIP holds only the
// __pycache__ folders, laid out as the wheels unpack (the worker unpacks it after them),
// stored rather than deflated: the worker copies its files out without inflating each
// (a server that compresses what it sends still shrinks it on the wire).
import { readFileSync, writeFileSync } from "node:fs";

const [pyodideDir, outZip, ...wheels] = process.argv.slice(2);
const { loadPyodide } = await import(`${pyodideDir}/pyodide.mjs`);
const py = await loadPyodide({ indexURL: `${pyodideDir}/` });
for (const w of wheels) py.unpackArchive(new Uint8Array(readFileSync(w)), "wheel");
py.runPython(`
import compileall, os, py_compile, zipfile
root = os.getcwd()  # where unpackArchive put the wheels, as in the worker
mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
tops = [d for d in os.listdir(root) if os.path.isdir(d) and not d.endswith(".dist-info")]
for d in tops:
    if not compileall.compile_dir(d, quiet=1, invalidation_mode=mode):
        raise SystemExit(f"bytecode: {d} did not compile")
with zipfile.ZipFile("/tmp/bytecode.zip", "w", zipfile.ZIP_STORED) as z:
    for d in sorted(tops):
        for base, dirs, files in os.walk(d):
            dirs.sort()
            if os.path.basename(base) == "__pycache__":
                for f in sorted(files):
                    # a fixed time, as in the scellis wheel: the same modules, the same zip
                    path = os.path.join(base, f)
                    info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
                    info.external_attr = 0o644 << 16
                    with open(path, "rb") as src:
                        z.writestr(info, src.read())
`);
writeFileSync(outZip, py.FS.readFile("/tmp/bytecode.zip"));
