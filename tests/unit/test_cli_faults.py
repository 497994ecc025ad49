"""Faults of the file system and the command line: one line, exit 2, never a traceback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import scellis
from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.cli.serve import make_server
from storeutil import write_record

SRC = str(Path(scellis.__file__).resolve().parent.parent)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml"


def _one_line(capsys, argv, match: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [x for x in err.splitlines() if x.startswith(("Error:", "scellis: error:"))]
    assert "Traceback" not in err and len(errors) == 1, err
    assert re.search(match, err), err


def test_export_of_a_missing_file(tmp_path, capsys):
    _one_line(capsys, ["export", str(tmp_path / "nope.sml"), "--to", "pt"], "cannot read")
    binary = tmp_path / "bin.sml"
    binary.write_bytes(b"\xff\xfe\x00")
    _one_line(capsys, ["export", str(binary), "--to", "pt"], r"not a text \(UTF-8\) file")


def test_serve_on_a_port_that_does_not_exist(capsys):
    _one_line(capsys, ["serve", "--port", "99999"], "99999 is not in the range")
    with pytest.raises(ScellisError, match="0 to 65535"):
        make_server(".", 99999)


def test_outputs_where_a_file_is_in_the_way(tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    for to in ("safetensors", "pt", "torch"):
        out = str(blocker / "m.out")
        _one_line(capsys, ["export", str(EXAMPLE), "--to", to, "--out", out], "cannot write")


def _unprivileged() -> list[str] | None:
    """A command prefix that takes away root's right to write anywhere (or none needed)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


@pytest.mark.parametrize("what", ["export --out", "import --to", "runs export -o"])
def test_outputs_into_a_read_only_folder(tmp_path, what):
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: a read-only folder is writable")
    torch = pytest.importorskip("torch")
    ro = tmp_path / "ro"
    ro.mkdir()
    rec = tmp_path / "m.sml"
    shutil.copy(EXAMPLE, rec)
    if what == "export --out":
        argv = ["export", str(rec), "--to", "safetensors", "--out", str(ro / "m.safetensors")]
    elif what == "import --to":
        sd = tmp_path / "w.safetensors"
        assert main(["export", str(rec), "--to", "safetensors", "--out", str(sd)]) == 0
        argv = ["import", str(sd), "--record", str(rec), "--to", str(ro / "m.sml"),
                "--store", str(tmp_path / "st")]  # fmt: skip
    else:
        store = tmp_path / "st"
        tiny = write_record(tmp_path)
        assert main(["train", str(tiny), "--store", str(store), "--device", "reference",
                     "--max-steps", "2"]) == 0  # fmt: skip
        argv = ["runs", "export", "last", "--store", str(store), "-o", str(ro / "b.tar")]
    del torch
    ro.chmod(0o555)
    try:
        code = "import sys; from scellis.cli.main import main; sys.exit(main(sys.argv[1:]))"
        env = {**os.environ, "PYTHONPATH": SRC}
        out = subprocess.run([*prefix, sys.executable, "-c", code, *argv], env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    finally:
        ro.chmod(0o755)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert "Permission denied" in out.stderr


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_inputs_that_are_not_regular_files_are_refused_without_blocking(tmp_path, capsys, kind):
    if kind == "fifo":
        path = tmp_path / "in.pt"
        os.mkfifo(path)  # no writer: a plain read would wait forever
        want = r"a FIFO \(named pipe\), not a regular file"
    elif kind == "device":
        path = Path("/dev/zero")  # a plain read would never end
        want = "a character device, not a regular file"
    else:
        path = tmp_path / "dir.pt"
        path.mkdir()
        want = "a folder, not a regular file|is a directory|a folder no codec reads"
    store = str(tmp_path / "st")
    for argv in (
        ["import", str(path), "--codec", "codec/torch", "--store", store],
        ["export", str(path), "--to", "pt", "--out", str(tmp_path / "o.pt")],
        ["runs", "import", str(path), "--store", store],
        ["models", "save", str(path), "--store", store],
        ["plan", str(path)],
        ["train", str(path), "--store", store],
    ):
        _one_line(capsys, argv, want)
    assert main(["validate", str(path)]) == 2
    assert re.search(want, capsys.readouterr().err)


def test_outputs_that_are_fifos_are_refused_without_blocking_or_storing(tmp_path, capsys):
    pipe = tmp_path / "out"
    os.mkfifo(pipe)  # no reader: a plain write would wait forever
    import torch  # noqa: PLC0415

    torch.save(torch.nn.Linear(3, 2).state_dict(), tmp_path / "lin.pt")
    (tmp_path / "lin.sml").write_text(
        "model: t/lin@1\ninputs:\n  x: {shape: [batch, 3], dtype: f32}\nblocks:\n"
        "  fc: {block_id: nn/linear, in: x, in_features: 3, out_features: 2}\noutputs: [fc]\n"
        "determinism_tier: debug\n"
    )
    store = tmp_path / "st"
    want = r"out: cannot write: it is a FIFO \(named pipe\), not a regular file"
    imp = ["import", str(tmp_path / "lin.pt"), "--record", str(tmp_path / "lin.sml"),
           "--map", "weight=fc.weight", "--map", "bias=fc.bias", "--store", str(store)]  # fmt: skip
    _one_line(capsys, [*imp, "--to", str(pipe)], want)
    assert not store.exists()  # refused before the weights were stored
    _one_line(capsys, [*imp, "--to", ""], "the output path is empty")
    assert main([*imp, "--to", str(tmp_path / "lin2.sml")]) == 0
    capsys.readouterr()
    for to in ("safetensors", "pt", "onnx"):
        argv = ["export", str(tmp_path / "lin2.sml"), "--store", str(store), "--to", to]
        _one_line(capsys, [*argv, "--out", str(pipe)], want)
    # predict refuses its outputs before it opens the run (no run exists here at all)
    for flag in ("--out", "--png"):
        _one_line(capsys, ["predict", "no-such-run", "--store", str(store), flag, str(pipe)], want)
    _one_line(capsys, ["init", str(pipe), "--force"], want)


def test_a_data_source_that_is_a_fifo_is_refused(tmp_path):
    from scellis.data.record import load_data

    os.mkfifo(tmp_path / "series.csv")
    data = {"source": "series.csv", "format": "csv", "column": "v", "window": 2, "horizon": 1}
    with pytest.raises(ScellisError, match="FIFO"):
        load_data(data, tmp_path)
    with pytest.raises(ScellisError, match="FIFO"):
        load_data({"source": "series.csv", "format": "text"}, tmp_path)


def test_thousands_of_bad_param_groups_are_listed_in_a_screenful(tmp_path, capsys):
    groups = "".join(f"    - {{params: 'nothing{i}.*', lr: 0.1}}\n" for i in range(1000))
    text = EXAMPLE.read_text().replace(
        "optimizer: { block_id: training/optimizer/adam, lr: 0.01 }",
        "optimizer:\n  block_id: training/optimizer/adam\n  lr: 0.01\n  groups:\n" + groups,
    )
    record = tmp_path / "groups.sml"
    record.write_text(text)
    argv = ["train", str(record), "--device", "reference", "--store", str(tmp_path / "s")]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert "Traceback" not in "\n".join(err) and len(err) == 21, err[:3]
    assert err[0].startswith("scellis: error: ") and "'nothing0.*' matches no parameter" in err[0]
    assert err[-1] == "... and 980 more problems"
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "argv",
    [["generate", "r", "--top-p", "1.5"], ["nosuch"], ["train"], ["train", "x", "--lr", "fast"]],
)
def test_a_usage_mistake_is_one_line_naming_the_help(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("scellis: error: ") and "--help)" in err, err
