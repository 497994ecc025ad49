"""The built site, checked as files (no browser): wheel, service worker list, API errors.

The wheel must be what pip would accept (RECORD hashes match every member) and carry
no module that imports NumPy or wgpu; the service worker must precache every file the
site holds; and the worker's ``dispatch`` must turn a bad record into located
diagnostics (line:col) rather than a traceback.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import struct
import zipfile
from pathlib import Path

import pytest

from scellis.base.errors import Diagnostic
from scellis.webapp import api


def test_wheels_are_complete_and_browser_safe(site_dir):
    manifest = json.loads((site_dir / "wheels" / "manifest.json").read_text())
    names = manifest["wheels"]
    # the test site carries the benchmark hooks beside the shipped wheels (conftest)
    assert manifest["imports"] == ["tabbench"] and names[-1].startswith("tabbench-")
    assert names[0].startswith("scellis-") and len(names) == 4
    assert any(n.startswith("ruamel_yaml-") for n in names)
    assert any(n.startswith("click-") for n in names)
    with zipfile.ZipFile(site_dir / "wheels" / names[0]) as z:
        members = set(z.namelist())
        record = next(n for n in members if n.endswith(".dist-info/RECORD"))
        rows = [r.split(",") for r in z.read(record).decode().splitlines() if r]
        for name, digest, size in rows:
            if name == record:
                continue
            data = z.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + want.decode() and int(size) == len(data), name
        assert {r[0] for r in rows} == members
        assert "scellis/devices/browser.py" in members
        assert "scellis/webapp/api.py" in members
        assert "scellis/data/bundled/sunspots_yearly.csv" in members
        assert not any(m.startswith("scellis/devices/reference/") for m in members)
        assert "scellis/devices/native_wgpu.py" not in members
        assert not any("bench" in m.rsplit("/", 1)[-1] for m in members)


def test_bytecode_covers_every_module_and_is_never_checked_against_sources(site_dir):
    """Every module of the three wheels has Pyodide bytecode, all for one interpreter
    (one magic number), flagged unchecked-hash (PEP 552 flags word 0b01): unpacking gives
    the sources new times, which would make Python drop timestamp-checked ones."""
    manifest = json.loads((site_dir / "wheels" / "manifest.json").read_text())
    assert manifest["bytecode"] == "bytecode.zip"
    modules = set()
    for name in manifest["wheels"]:
        with zipfile.ZipFile(site_dir / "wheels" / name) as z:
            modules |= {n[:-3] for n in z.namelist() if n.endswith(".py")}
    with zipfile.ZipFile(site_dir / "wheels" / "bytecode.zip") as z:
        pycs = {n: z.read(n)[:8] for n in z.namelist()}
    compiled = set()
    for n in pycs:
        folder, _, file = n.rpartition("/__pycache__/")
        compiled.add(f"{folder}/{file.split('.')[0]}")
    assert modules and modules <= compiled, sorted(modules - compiled)[:5]
    assert len({h[:4] for h in pycs.values()}) == 1
    assert all(int.from_bytes(h[4:8], "little") == 0b01 for h in pycs.values())


def test_the_snapshot_is_listed_and_every_archive_is_stored(site_dir):
    """The worker preallocates the snapshot from the manifest's size and inflates it as it
    arrives; it copies files out of the wheels and bytecode only when nothing in them is
    compressed (else Python unpacks them, slowly)."""
    manifest = json.loads((site_dir / "wheels" / "manifest.json").read_text())
    entry = manifest["snapshot"]
    assert entry["file"] == "snapshot.bin" and entry["gzip"] is True
    raw = gzip.decompress((site_dir / "wheels" / entry["file"]).read_bytes())
    assert len(raw) == entry["bytes"]
    # Pyodide's snapshot header: the magic b"\0snp", then where the memory starts
    magic, offset = struct.unpack_from("<4sI", raw)
    assert magic == b"\0snp" and offset % 16 == 0 and offset < len(raw)
    for name in [*manifest["wheels"], manifest["bytecode"]]:
        with zipfile.ZipFile(site_dir / "wheels" / name) as z:
            assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}, name


def test_service_worker_precaches_every_file(site_dir):
    sw = (site_dir / "sw.js").read_text()
    listed = set(json.loads(re.search(r"const FILES = (\[.*?\]);", sw).group(1)))
    files = {
        "./" + p.relative_to(site_dir).as_posix()
        for p in site_dir.rglob("*")
        if p.is_file() and p.name != "sw.js" and not p.name.endswith(".map")
    }
    assert files <= listed and listed - files == {"./"}
    for needed in ("./pyodide/pyodide.asm.wasm", "./worker.js", "./app.js", "./index.html"):
        assert needed in listed


def test_a_bad_record_gives_located_diagnostics():
    example = Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml"
    text = example.read_text().replace("block_id: nn/lstm", "block_id: nn/no_such_block")
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "nn/no_such_block" in t)
    col = lines[line - 1].index("nn/no_such_block") + 1
    with pytest.raises(Diagnostic):
        api.dispatch("plan", json.dumps({"record_text": text, "device": "null"}))
    err = api.last_error()
    assert err["type"] == "RecordProblems"
    where = [(d["line"], d["col"]) for d in err["diagnostics"] if "no_such_block" in d["message"]]
    assert where == [(line, col)], err["diagnostics"]
    assert api.last_error() is None  # told once


def test_unknown_command_and_bad_arguments_are_clear():
    with pytest.raises(Exception, match="unknown command 'nope'"):
        api.dispatch("nope", "{}")
    with pytest.raises(Exception, match="train: missing a required argument: 'record_text'"):
        api.dispatch("train", json.dumps({"recrd": ""}))
