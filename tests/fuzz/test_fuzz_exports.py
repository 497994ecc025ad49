"""The export writers, fuzzed on what is already at the destination and on its name.

``exports``: a destination (and each file an export writes into it, its subfolders and a
file of the user's beside them) drawn as absent, a file of random bytes, a folder, a
FIFO, or a link to a sentinel file, folder or nowhere, with or without ``--force``.
``export_names``: output names drawn from odd text (control characters, long parts,
nested folders, NUL). For every case the result is success or one ScellisError; the
sentinel never changes; no temporary file stays; a refusal leaves the destination as it
was; a success leaves every output a regular file and the user's other files as they were.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import stat
import sys
from pathlib import Path

import pytest
from harness import budget, checked
from hypothesis import given
from hypothesis import strategies as st

from scellis.codecs.convert import export_tensors, record_weights
from scellis.codecs.torchtrain.package import (
    PACKAGE_FILES,
    PACKAGE_FOLDERS,
    record_source,
    write_package,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from storeutil import write_record  # noqa: E402

_n = itertools.count()
GPT = """\
model: tests/fuzz_gpt@1
inputs:
  ids: { shape: [batch, 4], dtype: i32 }
blocks:
  tok: { block_id: nn/embedding, in: ids, num_embeddings: 8, embedding_dim: 4 }
  pos: { block_id: nn/learned_position, in: tok, max_len: 4, dim: 4, std: 0.5 }
  body: { block_id: nn/transformer, in: pos, d_model: 4, num_heads: 1, num_layers: 1 }
  head: { block_id: nn/lm_head, in: body, d_model: 4, vocab_size: 8 }
outputs: [head]
determinism_tier: debug
seed: 2
"""
# --to: the files it writes into its folder (None: one file)
FOLDERS = {
    "safetensors": None,
    "pt": None,
    "torch": ("model.py", "state_dict.pt"),
    "hf": ("config.json", "generation_config.json", "model.safetensors"),
    "torch-train": (*PACKAGE_FILES, "data/series.csv"),
}
KINDS = ("absent", "file", "folder", "fifo", "link_file", "link_dir", "dangling")

USERS = "README.md"  # the user's own file in the destination folder


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-exports")
    (root / "src").mkdir()
    tiny = write_record(root / "src")
    (root / "src" / "gpt.sml").write_text(GPT)
    store = root / "src" / ".store"
    sources = {
        "tiny": record_weights(tiny, store),
        "gpt": record_weights(root / "src" / "gpt.sml", store),
        "package": record_source(tiny, store, None),
    }
    sentinel = root / "sentinel"
    (sentinel / "inner").mkdir(parents=True)
    (sentinel / "secret.txt").write_bytes(os.urandom(64))
    (sentinel / "inner" / "model.safetensors").write_bytes(os.urandom(64))
    return root, sources, sentinel


def _state(folder: Path) -> dict:
    """Every entry under ``folder`` by relative path: its kind and bytes, links unfollowed."""
    out = {}
    for at, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = Path(at) / name
            mode = os.lstat(p).st_mode
            if stat.S_ISREG(mode):
                data = p.read_bytes()
            else:
                data = os.readlink(p).encode() if stat.S_ISLNK(mode) else b""
            digest = hashlib.sha256(data).hexdigest()
            out[str(p.relative_to(folder))] = (stat.S_IFMT(mode), digest)
    return out


def _make(path: Path, kind: str, sentinel: Path) -> None:
    """``path`` as ``kind``; nothing when a folder on its way is not a real one (the
    setup must not write through a link itself)."""
    if os.path.lexists(path) or any(
        os.path.lexists(p) and not stat.S_ISDIR(os.lstat(p).st_mode) for p in path.parents
    ):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        path.write_bytes(os.urandom(32))
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link_file":
        path.symlink_to(sentinel / "secret.txt")
    elif kind == "link_dir":
        path.symlink_to(sentinel / "inner", target_is_directory=True)
    elif kind == "dangling":
        path.symlink_to(sentinel / "nothing-here")


def _export(sources, fmt: str, dest: Path, force: bool):
    if fmt == "torch-train":
        return write_package(dest, sources["package"], force=force)
    rec, tensors = sources["gpt" if fmt == "hf" else "tiny"]
    return export_tensors(rec, tensors, fmt, out=dest, beside=dest, force=force).written


def _no_temporaries(folder: Path) -> None:
    left = [p for p in folder.rglob("*") if p.name.endswith((".partial", ".tmp"))]
    assert not left, left


def _entries(fmt: str) -> list[str]:
    names = FOLDERS[fmt]
    return [] if names is None else [*names, *PACKAGE_FOLDERS, USERS]


@st.composite
def layouts(draw):
    fmt = draw(st.sampled_from(sorted(FOLDERS)))
    dest = draw(st.sampled_from(("absent", "folder", "folder", "file", *KINDS[2:])))
    entries = {}
    if dest == "folder":
        names = _entries(fmt)
        for name in names:  # absent or an earlier file, then at most two hostile ones:
            entries[name] = draw(st.sampled_from(("absent", "file")))  # successes happen too
        for name in draw(st.lists(st.sampled_from(names), max_size=2)) if names else ():
            entries[name] = draw(st.sampled_from(KINDS[2:]))
    return fmt, dest, entries, draw(st.booleans())


def test_exports_over_what_is_there(world):
    root, sources, sentinel = world
    before = _state(sentinel)

    @budget(100)
    @given(layouts())
    def run(layout):
        fmt, kind, entries, force = layout
        case = root / f"case{next(_n)}"
        case.mkdir()
        dest = case / ("out" if FOLDERS[fmt] is not None else "out.bin")
        _make(dest, kind, sentinel)
        for name, entry in entries.items():
            if entry != "absent":
                _make(dest / name, entry, sentinel)
        was = _state(case)
        written = checked("exports", _export, sources, fmt, dest, force)
        assert _state(sentinel) == before, "the sentinel changed"
        _no_temporaries(case)
        now = _state(case)
        if written is None:
            assert now == was, "a refused export changed the destination"
            return
        for path in written:
            assert stat.S_ISREG(os.lstat(path).st_mode), path
        outputs = {str(Path(p).relative_to(case)) for p in written}
        for name, state in was.items():
            if name not in outputs and not any(o.startswith(name + os.sep) for o in outputs):
                assert now.get(name) == state, f"{name} changed"
            elif not force:
                assert state[0] == stat.S_IFDIR, f"{name} replaced without force"

    run()


def _export_to(rec, tensors, dest, force):
    return export_tensors(rec, tensors, "safetensors", out=dest, beside=dest, force=force)


_PART = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=90)


def test_export_names(world):
    root, sources, sentinel = world
    before = _state(sentinel)
    box = root / "names"
    box.mkdir()
    outside = _state(root / "src")

    @budget(60)
    @given(st.lists(_PART, min_size=1, max_size=3), st.booleans())
    def run(parts, force):
        if any(p in (".", "..") or "/" in p for p in parts):
            parts = [p.replace("/", "_").replace(".", "_") for p in parts]
        dest = box / f"c{next(_n)}" / os.path.join(*parts)
        rec, tensors = sources["tiny"]
        checked("export_names", _export_to, rec, tensors, dest, force)
        assert _state(sentinel) == before and _state(root / "src") == outside
        _no_temporaries(box)

    run()
