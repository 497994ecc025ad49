"""Building the static site (cli layer): everything the tab needs, in one folder.

``build_site(out)`` writes:

- ``pyodide/``: the interpreter and standard library from the npm ``pyodide`` package;
- ``wheels/``: a pure-Python wheel of scellis (written here as a zip, from the source
  tree), and the ``ruamel.yaml`` and ``click`` wheels (from a local cache, filled by
  ``pip download`` at build time the first time), listed in ``wheels/manifest.json``;
  every archive the tab unpacks has its members stored, not deflated, so the worker
  copies files out of it (a server that compresses what it sends still shrinks them),
  with ``bytecode.zip``: their modules compiled by the shipped Pyodide (node runs
  ``web/compile_bytecode.mjs``), so the tab does not compile Python source at each start,
  and ``snapshot.bin``: the shipped Pyodide's memory with those wheels installed and the
  engine's modules (``SNAPSHOT_MODULES``) imported (node runs ``web/make_snapshot.mjs``),
  which the tab restores instead of starting Python and importing scellis itself;
- ``app.js``/``app.css`` (the front end bundled by esbuild), ``worker.js``,
  ``index.html``, ``favicon.svg``, ``examples/*.sml``;
- ``sw.js``: a service worker that precaches every file above under a cache name
  derived from their contents, so the site works offline after its first load.

``build_site(out, extra_packages=[DIR])`` also carries each named folder's pure-Python
package as its own wheel, listed in the manifest's ``imports``: the snapshot has it
imported and the worker imports it at boot, so its ``@command`` functions are worker
commands (the benchmark harness's ``bench/tab/tabbench`` reaches the tab this way, and the
shipped package carries no benchmark code).

Building may use the network (npm, PyPI); the built site never does.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import scellis

from ..base.errors import ScellisError

PACKAGE_DIR = Path(scellis.__file__).resolve().parent
REPO = PACKAGE_DIR.parents[1]
WEB = REPO / "web"
PYODIDE_FILES = (
    "pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
    "pyodide-lock.json",
)  # fmt: skip
# pure-Python wheels the engine imports in the tab, by distribution name
DEPENDENCIES = ("ruamel.yaml", "click")
# modules that can never run in a browser (they import numpy or wgpu) stay out of the wheel
NATIVE_ONLY = ("scellis/devices/reference/", "scellis/devices/native_wgpu.py")
# what the snapshot has imported: the modules the worker imports at boot, with what they
# import. Each must hold no browser object at import (a snapshot cannot keep one): the
# browser device only imports ``js`` then, and asks it for the GPU once installed
SNAPSHOT_MODULES = ("scellis.devices.browser", "scellis.webapp.api")


def wheel_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "scellis" / "wheels"


def _need_web() -> None:
    if not (WEB / "package.json").is_file():
        raise ScellisError(f"site build needs the source checkout's web/ folder (looked in {WEB})")


def ensure_node_modules() -> Path:
    """web/node_modules, installed with ``npm ci`` from the committed lock file if absent."""
    _need_web()
    nm = WEB / "node_modules"
    if not (nm / "pyodide" / "pyodide.mjs").is_file() or not (nm / ".bin" / "esbuild").exists():
        npm = shutil.which("npm")
        if npm is None:
            raise ScellisError("site build needs npm (apt-get install npm) to fetch web/ packages")
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=WEB, capture_output=True)
        if r.returncode != 0:
            raise ScellisError(f"npm ci in {WEB} failed: {r.stderr.decode()[-400:]}")
    return nm


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _package_files(package: Path, skip: tuple[str, ...] = ()) -> list[tuple[str, bytes]]:
    """(path in the wheel, bytes) of every source and data file of ``package``."""
    files = []
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package.parent).as_posix()
        if not path.is_file() or "__pycache__" in rel or path.suffix == ".pyc":
            continue
        if any(rel.startswith(p) for p in skip):
            continue
        files.append((rel, path.read_bytes()))
    return files


def write_scellis_wheel(dest: Path) -> Path:
    """A py3-none-any wheel of the scellis package (browser-usable modules and data)."""
    requires = "Requires-Dist: ruamel.yaml>=0.18\nRequires-Dist: click>=8.1\n"
    files = _package_files(PACKAGE_DIR, NATIVE_ONLY)
    return _write_wheel(dest, "scellis", scellis.__version__, files, requires)


def package_dir(folder: str | Path) -> Path:
    """``folder`` as a package folder a site can carry, or one clear refusal."""
    package = Path(folder).resolve()
    if not (package / "__init__.py").is_file():
        raise ScellisError(f"{folder} is not a Python package folder (no __init__.py)")
    if not package.name.isidentifier():
        raise ScellisError(f"{folder}: {package.name!r} is not a Python package name")
    return package


def write_package_wheel(package: Path, dest: Path) -> Path:
    """A py3-none-any wheel of the pure-Python package in folder ``package`` (its name is
    the folder's), for a site that carries it beside scellis."""
    package = package_dir(package)
    return _write_wheel(dest, package.name, "0", _package_files(package), "")


def _write_wheel(dest: Path, dist: str, version: str, files: list, requires: str) -> Path:
    name = f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n{requires}".encode()
    wheel = b"Wheel-Version: 1.0\nGenerator: scellis site build\nRoot-Is-Purelib: true\n"
    wheel += b"Tag: py3-none-any\n"
    files += [(f"{info}/METADATA", meta), (f"{info}/WHEEL", wheel)]
    record = "\n".join(_record_line(n, d) for n, d in files) + f"\n{info}/RECORD,,\n"
    out = dest / name
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for n, d in files:
            z.writestr(zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0)), d)
        z.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)), record)
    return out


def copy_stored(wheel: Path, dest: Path) -> Path:
    """``wheel`` copied into ``dest`` with its members stored: the same names, order,
    times and bytes (RECORD still holds), only not deflated."""
    out = dest / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for info in src.infolist():
            data = src.read(info)
            info.compress_type = zipfile.ZIP_STORED
            z.writestr(info, data)
    return out


def _cached_wheel(dist: str, version: str) -> Path | None:
    stem = dist.replace(".", "_").replace("-", "_").lower()
    for p in wheel_cache().glob("*.whl"):
        low = p.name.lower()
        if low.startswith(f"{stem}-{version}-") and low.endswith("-none-any.whl"):
            return p
    return None


def dependency_wheels() -> list[Path]:
    """The pure-Python wheels of DEPENDENCIES at the versions installed here (pip
    downloads a missing one into the cache once; later builds need no network)."""
    out = []
    for dist in DEPENDENCIES:
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            raise ScellisError(f"site build: {dist} is not installed here") from None
        hit = _cached_wheel(dist, version)
        if hit is None:
            wheel_cache().mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
            cmd += ["--only-binary=:all:", "-d", str(wheel_cache()), f"{dist}=={version}"]
            r = subprocess.run(cmd, capture_output=True)
            hit = _cached_wheel(dist, version)
            if r.returncode != 0 or hit is None:
                raise ScellisError(
                    f"site build: no pure-Python wheel of {dist}=={version} in "
                    f"{wheel_cache()} and pip download failed: {r.stderr.decode()[-300:]}"
                )
        out.append(hit)
    return out


def compile_bytecode(nm: Path, wheels: list[Path], out: Path) -> str | None:
    """The wheels' modules as Pyodide bytecode in ``out/bytecode.zip``; None (the tab
    then compiles the sources itself, only slower) where node cannot make it."""
    node = shutil.which("node")
    if node is None:
        print("site build: no node, so no bytecode.zip (the tab starts slower)", file=sys.stderr)
        return None
    cmd = [node, str(WEB / "compile_bytecode.mjs"), str((nm / "pyodide").resolve())]
    cmd += [str(out / "bytecode.zip"), *map(str, wheels)]
    r = subprocess.run(cmd, capture_output=True, timeout=600)
    if r.returncode != 0:
        raise ScellisError(f"compiling the wheels to bytecode failed: {r.stderr.decode()[-600:]}")
    return "bytecode.zip"


def make_snapshot(
    nm: Path, archives: list[Path], out: Path, modules: tuple[str, ...] = SNAPSHOT_MODULES
) -> dict | None:
    """``out/snapshot.bin``: Pyodide's memory after unpacking ``archives`` (the wheels,
    then their bytecode) and importing SNAPSHOT_MODULES; None (the tab then starts
    Python itself, only slower) where node cannot make it."""
    node = shutil.which("node")
    if node is None:
        print("site build: no node, so no snapshot.bin (the tab starts slower)", file=sys.stderr)
        return None
    cmd = [node, str(WEB / "make_snapshot.mjs"), str((nm / "pyodide").resolve())]
    cmd += [str(out / "snapshot.bin"), ",".join(modules), *map(str, archives)]
    r = subprocess.run(cmd, capture_output=True, timeout=600)
    if r.returncode != 0:
        raise ScellisError(f"making the Python snapshot failed: {r.stderr.decode()[-600:]}")
    return gzip_snapshot(out / "snapshot.bin")


def gzip_snapshot(path: Path) -> dict:
    """The snapshot gzipped in place (a third of its size: much of a heap is zeros and
    repeats; the worker inflates it as it arrives), and how the manifest lists it."""
    raw = path.read_bytes()
    # mtime 0 and no file name in the header: the same snapshot gives the same file
    path.write_bytes(gzip.compress(raw, compresslevel=6, mtime=0))
    return {"file": path.name, "bytes": len(raw), "gzip": True}


def bundle_js(nm: Path, out: Path) -> None:
    esbuild = nm / ".bin" / "esbuild"
    cmd = [str(esbuild), "src/main.js", "--bundle", "--format=esm", "--target=es2022"]
    cmd += ["--minify", "--sourcemap", f"--outfile={out / 'app.js'}", "--log-level=warning"]
    r = subprocess.run(cmd, cwd=WEB, capture_output=True)
    if r.returncode != 0:
        raise ScellisError(f"esbuild failed: {r.stderr.decode()[-800:]}")


SW_TEMPLATE = """// Generated by `scellis site build`: precache the site, then serve it cache-first,
// so the app opens and trains with the network off after its first load.
const CACHE = "scellis-%(version)s";
const FILES = %(files)s;
self.addEventListener("install", (e) => {
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(FILES)).then(() => self.skipWaiting()));
});
self.addEventListener("activate", (e) => {
  e.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});
self.addEventListener("fetch", (e) => {
  if (e.request.method !== "GET") return;
  const url = new URL(e.request.url);
  if (url.origin !== location.origin) return;
  const key = url.pathname.endsWith("/") ? url.pathname + "index.html" : url.pathname;
  e.respondWith(caches.open(CACHE).then((c) =>
    c.match(key, { ignoreSearch: true }).then((hit) => hit || fetch(e.request))));
});
"""


def write_service_worker(out: Path) -> str:
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    files = [f for f in files if f != "sw.js" and not f.endswith(".map")]
    h = hashlib.sha256()
    for f in files:
        h.update(f.encode() + b"\0" + hashlib.sha256((out / f).read_bytes()).digest())
    version = h.hexdigest()[:16]
    urls = ["./"] + [f"./{f}" for f in files]
    (out / "sw.js").write_text(SW_TEMPLATE % {"version": version, "files": json.dumps(urls)})
    return version


def build_site(out: str | Path, extra_packages: list[str | Path] = ()) -> dict:
    """Build the site into ``out`` (emptied first); returns what was written.
    ``extra_packages``: folders of pure-Python packages the tab also imports at boot."""
    out = Path(out)
    packages = [package_dir(p) for p in extra_packages]  # refused before any work
    nm = ensure_node_modules()
    if out.exists():
        if not out.is_dir() or (any(out.iterdir()) and not (out / "sw.js").exists()):
            raise ScellisError(f"{out} exists and is not a scellis site; choose another --out")
        shutil.rmtree(out)
    (out / "pyodide").mkdir(parents=True)
    for f in PYODIDE_FILES:
        shutil.copy2(nm / "pyodide" / f, out / "pyodide" / f)
    wheels = out / "wheels"
    wheels.mkdir()
    names = [write_scellis_wheel(wheels).name]
    for w in dependency_wheels():
        names.append(copy_stored(w, wheels).name)
    imports = []
    for package in packages:
        names.append(write_package_wheel(package, wheels).name)
        imports.append(package.name)
    manifest = {"wheels": names, "imports": imports}
    bytecode = compile_bytecode(nm, [wheels / n for n in names], wheels)
    archives = [wheels / n for n in names]
    if bytecode:
        manifest["bytecode"] = bytecode
        archives.append(wheels / bytecode)
    snapshot = make_snapshot(nm, archives, wheels, SNAPSHOT_MODULES + tuple(imports))
    if snapshot:
        manifest["snapshot"] = snapshot
    (wheels / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (out / "examples").mkdir()
    for sml in sorted((REPO / "examples").glob("*.sml")):
        shutil.copy2(sml, out / "examples" / sml.name)
    shutil.copy2(WEB / "index.html", out / "index.html")
    shutil.copy2(WEB / "worker.js", out / "worker.js")
    shutil.copy2(WEB / "favicon.svg", out / "favicon.svg")
    bundle_js(nm, out)
    version = write_service_worker(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {"out": str(out), "wheels": names, "cache": version, "bytes": size}


def site_is_current(out: Path) -> bool:
    """True when ``out`` holds a build newer than every source file it is made from."""
    sw = out / "sw.js"
    if not sw.is_file():
        return False
    built = sw.stat().st_mtime
    sources = [WEB / "index.html", WEB / "worker.js", WEB / "favicon.svg"]
    sources += [WEB / "compile_bytecode.mjs", WEB / "make_snapshot.mjs"]
    sources += list((WEB / "src").rglob("*"))
    sources += list(PACKAGE_DIR.rglob("*.py")) + list((REPO / "examples").glob("*.sml"))
    return all(p.stat().st_mtime <= built for p in sources if p.is_file())
