"""``scellis export`` against hostile destinations: links out of the folder, earlier
exports, FIFOs and devices, and an interruption mid-write. Every refusal is one line,
exit 2, before any work; nothing outside the named destination changes; an earlier
export stays whole; no temporary file is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from hostile import Sentinel, refuse

from scellis.base import files
from scellis.cli.main import main
from scellis.codecs.torch import pt
from scellis.codecs.torchtrain.package import PACKAGE_FILES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from storeutil import write_record  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"

# a GPT-2 shaped record: the layout --to hf writes
GPT = """\
model: tests/tiny_gpt@1
inputs:
  ids: { shape: [batch, 8], dtype: i32 }
blocks:
  tok: { block_id: nn/embedding, in: ids, num_embeddings: 24, embedding_dim: 8 }
  pos: { block_id: nn/learned_position, in: tok, max_len: 8, dim: 8, std: 0.5 }
  body: { block_id: nn/transformer, in: pos, d_model: 8, num_heads: 2, num_layers: 1 }
  head: { block_id: nn/lm_head, in: body, d_model: 8, vocab_size: 24 }
outputs: [head]
determinism_tier: debug
seed: 5
"""

# --to: (the record it exports, the destination's name, the files written in a folder;
# None: the destination is one file)
FORMATS = {
    "safetensors": ("tiny", "out.safetensors", None),
    "pt": ("tiny", "out.pt", None),
    "onnx": ("tiny", "out.onnx", None),
    "torch": ("tiny", "out_torch", ("model.py", "state_dict.pt")),
    "hf": ("gpt", "out_hf", ("config.json", "generation_config.json", "model.safetensors")),
    "torch-train": ("tiny", "out_tt", PACKAGE_FILES),
}


@pytest.fixture
def work(tmp_path):
    """(the records by name, the folder exports go to, a sentinel folder beside it)."""
    (tmp_path / "src").mkdir()
    tiny = write_record(tmp_path / "src", seed=int.from_bytes(os.urandom(2), "little") + 1)
    gpt = tmp_path / "src" / "gpt.sml"
    gpt.write_text(GPT.replace("seed: 5", f"seed: {int.from_bytes(os.urandom(2), 'little')}"))
    dest = tmp_path / "dest"
    dest.mkdir()
    return {"tiny": tiny, "gpt": gpt}, dest, Sentinel(tmp_path / "sentinel")


def _argv(records, dest, fmt, *extra):
    rec, name, _ = FORMATS[fmt]
    store = records[rec].parent / ".store"
    return ["export", records[rec], "--to", fmt, "--out", dest / name, "--store", store, *extra]


def _export(capsys, records, dest, fmt, *extra):
    rc = main([str(a) for a in _argv(records, dest, fmt, *extra)])
    assert rc == 0, capsys.readouterr().err
    capsys.readouterr()


def _snapshot(folder: Path) -> dict:
    """Every entry under ``folder``: its kind and bytes (links are not followed)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(folder))] = ("link", os.readlink(p))
        elif p.is_file():
            out[str(p.relative_to(folder))] = ("file", p.read_bytes())
        else:
            out[str(p.relative_to(folder))] = ("dir", b"")
    return out


def _no_temporaries(*folders: Path) -> None:
    for folder in folders:
        left = [p.name for p in folder.rglob("*") if p.name.endswith((".partial", ".tmp"))]
        assert not left, f"temporary files left in {folder}: {left}"


def _written(dest: Path, fmt: str) -> list[Path]:
    _, name, names = FORMATS[fmt]
    return [dest / name] if names is None else [dest / name / n for n in names]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_an_earlier_export_is_replaced_only_with_force(work, capsys, fmt):
    records, dest, sentinel = work
    _export(capsys, records, dest, fmt)
    target = _written(dest, fmt)[0]
    keep = dest / FORMATS[fmt][1] / "README.md" if FORMATS[fmt][2] else dest / "README.md"
    keep.write_bytes(os.urandom(64))  # the user's own file beside the export
    before = _snapshot(dest)
    line = refuse(capsys, _argv(records, dest, fmt), "exists; pass --force to replace it")
    assert target.name in line
    assert _snapshot(dest) == before
    inode = target.stat().st_ino
    _export(capsys, records, dest, fmt, "--force")
    assert target.stat().st_ino != inode  # a new file renamed into place
    assert keep.read_bytes() == before[str(keep.relative_to(dest))][1]  # never deleted
    _no_temporaries(dest)
    sentinel.unchanged()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_links_out_of_the_destination_are_refused(work, capsys, fmt):
    records, dest, sentinel = work
    _, name, names = FORMATS[fmt]
    out = dest / name
    links = [sentinel.root / "model.safetensors", sentinel.root, sentinel.root / "gone"]
    for link in links:  # a file, a folder, a dangling link: never written through
        if names is None:
            cases = [out]
        else:
            out.mkdir(exist_ok=True)
            cases = [out / n for n in names[:3]]
        for entry in cases:
            entry.symlink_to(link)
            for extra in ((), ("--force",)):
                line = refuse(capsys, _argv(records, dest, fmt, *extra), "symbolic link")
                assert not sentinel.secret_leaked(line)
            entry.unlink()
    sentinel.unchanged()
    _no_temporaries(dest, sentinel.root)


@pytest.mark.parametrize("fmt", ["torch", "hf", "torch-train"])
def test_a_linked_destination_folder_is_refused(work, capsys, fmt):
    records, dest, sentinel = work
    (dest / FORMATS[fmt][1]).symlink_to(sentinel.root, target_is_directory=True)
    refuse(capsys, _argv(records, dest, fmt, "--force"), "symbolic link")
    sentinel.unchanged()


@pytest.mark.parametrize("sub", ["data", "checkpoints"])
def test_a_linked_package_subfolder_is_refused(work, capsys, sub):
    records, dest, sentinel = work
    (dest / "out_tt").mkdir()
    (dest / "out_tt" / sub).symlink_to(sentinel.root, target_is_directory=True)
    refuse(capsys, _argv(records, dest, "torch-train", "--force"), "symbolic link")
    sentinel.unchanged()
    assert sorted(p.name for p in (dest / "out_tt").iterdir()) == [sub]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_fifos_devices_and_the_wrong_kind_are_refused(work, capsys, fmt):
    records, dest, sentinel = work
    rec, name, names = FORMATS[fmt]
    out = dest / name
    os.mkfifo(out)  # opening it to write would block until a reader comes
    refuse(capsys, _argv(records, dest, fmt, "--force"), "FIFO")
    out.unlink()
    if names is None:
        out.mkdir()  # a folder where the file goes
        refuse(capsys, _argv(records, dest, fmt, "--force"), "a folder")
        argv = ["export", records[rec], "--to", fmt, "--out", "/dev/null", "--force"]
        refuse(capsys, argv, "character device")
    else:
        out.write_bytes(os.urandom(32))  # a file where the folder goes
        refuse(capsys, _argv(records, dest, fmt, "--force"), "not a folder")
        out.unlink()
        out.mkdir()
        os.mkfifo(out / names[-1])
        refuse(capsys, _argv(records, dest, fmt, "--force"), "FIFO")
    sentinel.unchanged()
    _no_temporaries(dest)


class _Half:
    """A file that takes half of the first chunk written to it, then is interrupted."""

    def __init__(self, f):
        self.f = f

    def write(self, data):
        self.f.write(bytes(data)[: max(1, len(data) // 2)])
        self.f.flush()
        raise KeyboardInterrupt

    def __getattr__(self, name):
        return getattr(self.f, name)


def _interrupting(real):
    """``output_file`` whose writes stop half way with a KeyboardInterrupt (Ctrl-C)."""

    @contextmanager
    def opener(path, **kw):
        with real(path, **kw) as f:
            yield _Half(f)

    return opener


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_an_interrupted_export_leaves_the_earlier_whole(work, capsys, monkeypatch, fmt):
    records, dest, sentinel = work
    _export(capsys, records, dest, fmt)
    before = _snapshot(dest)
    opener = _interrupting(files.output_file)
    monkeypatch.setattr(files, "output_file", opener)
    monkeypatch.setattr(pt, "output_file", opener)
    rc = main([str(a) for a in _argv(records, dest, fmt, "--force")])
    assert rc == 130
    assert _snapshot(dest) == before
    _no_temporaries(dest)
    sentinel.unchanged()


SLOW_WRITER = """
import sys, time
sys.path.insert(0, {src!r})
from contextlib import contextmanager
from scellis.base import files
real = files.output_file

@contextmanager
def slow(path, **kw):
    with real(path, **kw) as f:
        if str(path).endswith("model.safetensors"):
            f.write(b"partial bytes")
            f.flush()
            print("WRITING", flush=True)
            time.sleep(60)
        yield f

files.output_file = slow
from scellis.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_during_an_hf_export_leaves_the_earlier_whole(work, capsys):
    records, dest, sentinel = work
    _export(capsys, records, dest, "hf")
    before = _snapshot(dest)
    argv = [str(a) for a in _argv(records, dest, "hf", "--force")]
    script = SLOW_WRITER.format(src=str(SRC))

    # as from a terminal: Ctrl-C's signal at its default, whatever the test process has
    # set (a child inherits an ignored SIGINT, and Python then never raises on it)
    def as_typed():
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-c", script, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=as_typed)  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "WRITING"
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=45)  # a loaded 2-core machine is slow to unwind
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip() == "scellis: interrupted"
    assert _snapshot(dest) == before
    _no_temporaries(dest)
    sentinel.unchanged()


def test_a_run_exports_with_the_same_rules(work, capsys):
    records, dest, sentinel = work
    store = records["tiny"].parent / ".store"
    argv = ["train", records["tiny"], "--store", store, "--device", "reference", "--json"]
    assert main([str(a) for a in argv]) == 0
    run = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run"]
    for fmt, out in (("safetensors", dest / "r.safetensors"), ("torch-train", dest / "r_tt")):
        argv = ["export", run, "--to", fmt, "--out", out, "--store", store]
        assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
        refuse(capsys, argv, "exists; pass --force")
        assert main([str(a) for a in [*argv, "--force"]]) == 0
    (dest / "linked.safetensors").symlink_to(sentinel.root / "model.safetensors")
    argv = ["export", run, "--to", "safetensors", "--out", dest / "linked.safetensors",
            "--store", store, "--force"]  # fmt: skip
    refuse(capsys, argv, "symbolic link")
    sentinel.unchanged()
    _no_temporaries(dest, store)
