"""``scellis init``: the starter records validate and train; nothing is overwritten."""

import pytest

from scellis.cli.main import main
from scellis.sml import parse


@pytest.mark.parametrize("template", ["forecaster", "char-lm"])
def test_starter_validates_and_keeps_its_comments(tmp_path, capsys, template):
    f = tmp_path / "exp" / "my_run.sml"
    assert main(["init", str(f), "--template", template, "--namespace", "user/ada"]) == 0
    text = f.read_text()
    assert text.count("#") >= 5  # a commented starter, not a bare dump
    assert parse(text.encode(), str(f)).data["model"] == "user/ada/my_run@1"
    assert main(["validate", str(f)]) == 0
    assert f"{f}: ok" in capsys.readouterr().out


def test_init_never_overwrites_without_force(tmp_path, capsys):
    f = tmp_path / "model.sml"
    f.write_text("# my precious work\n")
    assert main(["init", str(f)]) == 2
    assert "exists" in capsys.readouterr().err
    assert f.read_text() == "# my precious work\n"
    assert main(["init", str(f), "--force"]) == 0
    assert f.read_text().startswith("# A starter Scellis record")


@pytest.mark.parametrize("ns", ["User/Ada", "a//b", "1x", "a b"])
def test_bad_namespace_is_refused(tmp_path, capsys, ns):
    f = tmp_path / "m.sml"
    assert main(["init", str(f), "--namespace", ns]) == 2
    err = capsys.readouterr().err
    assert "namespace" in err and "Traceback" not in err
    assert not f.exists()


def test_starter_trains_a_few_steps(tmp_path, capsys):
    f = tmp_path / "m.sml"
    assert main(["init", str(f)]) == 0
    store = str(tmp_path / "store")
    argv = ["train", str(f), "--device", "reference", "--max-steps", "4", "--json"]
    argv += ["--store", store]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert '"kind": "end"' in out or '"kind":"end"' in out
