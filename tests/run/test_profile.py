"""``scellis profile``: one step's time by op, on the reference device (host times) and
on WebGPU (lavapipe, with GPU timestamps); the parts add up to no more than the step."""

from __future__ import annotations

import json

import pytest

import scellis as sc
from scellis.cli.main import main
from storeutil import write_record


@pytest.mark.parametrize("device", ["reference", "webgpu"])
def test_profile_accounts_for_a_step(tmp_path, capsys, device):
    rec = write_record(tmp_path)
    assert main(["profile", str(rec), "--device", device, "--warmup", "2", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    ops = {r["op"]: r for r in got["ops"]}
    assert got["step"] == 3 and got["device"] == device
    # one LSTM layer: its fused forward and backward once each in the step
    assert ops["lstm_seq"]["calls"] == 1 and ops["lstm_seq_backward"]["calls"] == 1
    assert ops["matmul"]["calls"] >= 2
    assert 0 < got["host_s"] <= got["wall_s"]
    if device == "webgpu":
        assert got["gpu_timed"] and 0 < got["gpu_s"] <= got["wall_s"]
        assert all(r["kernels"] >= r["calls"] for r in got["ops"] if r["op"] != "copy")
    else:
        assert not got["gpu_timed"] and got["gpu_s"] is None
    assert main(["profile", str(rec), "--device", device]) == 0
    out = capsys.readouterr().out
    assert out.startswith("step 3 on ") and "lstm_seq_backward" in out


def test_profile_says_which_device_auto_took_and_why(tmp_path, capsys):
    rec = write_record(tmp_path)
    assert main(["profile", str(rec), "--warmup", "1", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    adapters = sc.list_adapters()
    # a hardware adapter is taken; a software one (lavapipe) is passed over for NumPy
    hardware = [a for a in adapters if a["adapter_type"].lower() != "cpu"]
    assert got["device"] == ("webgpu" if hardware else "reference")
    assert got["device_choice"].startswith("auto: ")
    if adapters and not hardware:
        assert "--device webgpu" in got["device_choice"]
    assert main(["profile", str(rec), "--warmup", "1"]) == 0
    assert f"  ({got['device_choice']})\n" in capsys.readouterr().out
