"""``scellis plan`` and the refusal in ``scellis train``: verdicts, JSON, exit codes."""

from __future__ import annotations

import json
import re

import pytest
from planutil import ROOT, example, mixed

from scellis.cli.main import main
from scellis.devices import get_device
from scellis.ir.limits import resolve
from scellis.ir.plan import PlanRefused, make_plan
from scellis.webapp import run_api

LSTM = str(ROOT / "examples" / "lstm_forecaster.sml")
LM = str(ROOT / "examples" / "char_transformer.sml")
RECORDS = ROOT / "tests" / "plan" / "records"


def plan_json(capsys, *args) -> tuple[int, dict]:
    rc = main(["plan", *args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_green_plan_json_has_every_class_and_the_sources(capsys):
    rc, p = plan_json(capsys, LM, "--device", "reference", "--budget", "4GiB")
    assert rc == 0 and p["verdict"] == "green"
    for key in ("peak", "classes", "limits", "limits_source", "budget_source", "remediations"):
        assert key in p
    c = p["classes"]
    assert {"parameters", "gradients", "optimizer_state", "activations", "working"} <= set(c)
    # the peak is the co-resident sum at its instant
    assert p["step_peak"] == sum(c.values())
    assert p["peak"] == max(p["step_peak"], p["eval_peak"])
    assert p["budget_source"] == "--budget" and p["budget"] == 4 << 30
    # adam: two moments of every parameter (the flat buffers hold them all)
    assert c["optimizer_state"] == 2 * p["parameters_count"] * 4


def test_red_plan_names_fixes_with_savings_and_exits_2(capsys):
    # the step alone: this model's validation forward peaks above its training step, and
    # the step's remediations are what is asked of here
    rc, p = plan_json(capsys, LM, "--device", "reference", "--budget", "3MiB", "--no-validate")
    assert rc == 2 and p["verdict"] == "red"
    fixes = {r["kind"]: r for r in p["remediations"]}
    kinds = {"batch_size", "activation_checkpointing", "precision", "peft", "quantize_base"}
    assert kinds <= set(fixes)
    for name in kinds:  # each helps this model, planned with its edit applied
        fix = fixes[name]
        assert 0 < fix["saving"] < p["peak"] and "(planned)" in fix["detail"]
        assert fix["peak"] == p["peak"] - fix["saving"] and fix["set"]
    # none alone fits 3 MiB: together they do, and the combination says which
    both = fixes["combined"]
    assert both["verdict"] in ("green", "yellow") and both["peak"] <= 3 << 20
    assert p["remediations"][0] is both or p["remediations"][0] == both


def test_lora_is_no_fix_when_its_adapters_outweigh_the_weights(capsys):
    # a 2 -> 2 layer at batch 4096: x A^T is [batch, 8], four times the layer's output
    rc, p = plan_json(capsys, str(RECORDS / "narrow2.sml"), "--device", "reference",
                      "--budget", "64KiB")  # fmt: skip
    assert rc == 2
    lora = next(r for r in p["remediations"] if r["kind"] == "peft")
    assert lora["saving"] == 0 and "no saving" in lora["detail"]


def test_lora_is_the_fix_when_the_weights_dominate(capsys):
    # a 192 MiB layer: frozen, it needs no gradient (sgd keeps no state); traced saving
    rc, p = plan_json(capsys, str(RECORDS / "wide12288.sml"), "--device", "reference",
                      "--budget", "600MiB")  # fmt: skip
    assert rc == 2
    lora = next(r for r in p["remediations"] if r["kind"] == "peft")
    assert "(planned)" in lora["detail"] and p["peak"] - lora["saving"] < 600 << 20
    assert lora["saving"] > 0.9 * p["classes"]["gradients"]


def test_no_batch_size_helps_when_the_weights_alone_exceed(capsys):
    rc, p = plan_json(capsys, LSTM, "--device", "reference", "--budget", "64KiB")
    assert rc == 2
    first = p["remediations"][0]
    assert first["kind"] in ("peft", "quantize_base")
    assert "no batch size can help" in first["detail"]


def test_a_model_no_device_holds_names_the_torch_train_path(capsys):
    rc, p = plan_json(capsys, LSTM, "--device", "reference", "--budget", "64KiB")
    assert rc == 2 and any(x.startswith("too large for one device") for x in p["problems"])
    fix = next(r for r in p["remediations"] if r["fix"].startswith("too large for one device"))
    assert "scellis export REC --to torch-train DIR" in fix["fix"]
    assert re.search(r"torchrun --nproc_per_node \d+ DIR/train.py --fsdp", fix["fix"])
    assert 0 < fix["saving"] < p["peak"] and "FSDP" in fix["detail"]
    rc = main(["train", LSTM, "--device", "reference", "--budget", "64KiB", "--max-steps", "1"])
    assert rc == 2 and "--to torch-train DIR, then torchrun" in capsys.readouterr().err
    _, fits = plan_json(capsys, LSTM, "--device", "reference", "--budget", "2MiB")
    assert not any("torch-train" in r["fix"] for r in fits["remediations"])


def test_yellow_under_15_percent_headroom(capsys):
    _, green = plan_json(capsys, LSTM, "--device", "reference", "--budget", "1GiB")
    budget = int(green["peak"] * 1.1)
    rc, p = plan_json(capsys, LSTM, "--device", "reference", "--budget", str(budget))
    assert rc == 0 and p["verdict"] == "yellow"
    assert any("headroom" in w for w in p["warnings"])


def test_split_tensors_are_counted_and_too_many_bindings_red(capsys):
    rc, p = plan_json(capsys, str(RECORDS / "wide12288.sml"), "--device", "browser",
                      "--budget", "100GiB")  # fmt: skip
    assert rc == 0 and p["verdict"] == "green"  # the kernels split it: no warning
    assert p["limits"]["max_storage_buffer_binding_size"] == 128 << 20
    assert "browser" in p["limits_source"]
    assert p["split_tensors"] >= 1
    rc, p = plan_json(capsys, str(RECORDS / "wide16384.sml"), "--device", "browser",
                      "--budget", "100GiB")  # fmt: skip
    assert rc == 2 and p["verdict"] == "red"
    assert any("maxStorageBuffersPerShaderStage" in x for x in p["problems"])


def test_text_output_shows_where_numbers_come_from(capsys):
    assert main(["plan", LSTM, "--device", "webgpu-spec", "--budget", "2GiB"]) == 0
    out = capsys.readouterr().out
    assert "budget     from --budget" in out and "WebGPU spec" in out


@pytest.mark.parametrize("device", ["reference", "webgpu"])
def test_train_refuses_a_red_plan_before_allocating(capsys, device):
    dev = get_device(device)
    if device == "webgpu":
        before = (dev.stats["allocs"] + dev.stats["reuses"], dev.live_bytes)
    else:
        before = (dev.allocs, dev.live_bytes)
    rc = main(["train", LSTM, "--device", device, "--budget", "1KiB", "--max-steps", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "memory plan is red" in err and "LoRA/PEFT" in err
    if device == "webgpu":
        after = (dev.stats["allocs"] + dev.stats["reuses"], dev.live_bytes)
    else:
        after = (dev.allocs, dev.live_bytes)
    # not one buffer was allocated (earlier tests' garbage may be freed meanwhile)
    assert after[0] == before[0] and after[1] <= before[1]


def test_bad_budget_is_one_clear_line(capsys):
    assert main(["plan", LSTM, "--budget", "lots"]) == 2
    assert "cannot read 'lots' as a size" in capsys.readouterr().err


def test_schedule_packs_the_step_near_its_eager_peak(capsys):
    # last-use liveness frees a buffer at its last read; the eager step frees it when
    # Python drops it, which the tape (keeping only what a VJP reads) makes about as early.
    # First-fit slots of size classes then cost a little over the eager sum, never much
    rc, p = plan_json(capsys, LM, "--device", "webgpu-spec", "--budget", "4GiB")
    assert rc == 0 and 0 < p["schedule_bytes"] <= 1.1 * p["step_peak"]


def test_f16_is_not_offered_where_its_kernels_cannot_run(capsys):
    # the spec's default target has no shader-f16: there the plan does not suggest
    # mixed_f16 for the forecaster; on the reference (f16 emulated) it does
    _, on_gpu = plan_json(capsys, LSTM, "--device", "webgpu-spec", "--budget", "1MiB")
    _, on_ref = plan_json(capsys, LSTM, "--device", "reference", "--budget", "1MiB")
    assert not any(r["fix"].startswith("precision") for r in on_gpu["remediations"])
    assert any(r["fix"].startswith("precision") for r in on_ref["remediations"])


@pytest.mark.parametrize("path", [LSTM, LM], ids=["lstm", "transformer"])
def test_the_tab_plans_what_the_cli_plans(capsys, path):
    # one planning path (run.planning): the tab's verdict event is the CLI's plan,
    # the loop's guarded update included (the tab once planned a plain optimizer step)
    rc, cli = plan_json(capsys, path, "--device", "reference")
    tab = run_api.plan(open(path, encoding="utf-8").read(), device="reference")
    assert rc == 0 and tab.pop("kind") == "plan"
    # the reference device's budget is the host's free memory, read at each call
    assert tab.pop("budget") > 0 and cli.pop("budget") > 0
    assert tab == cli


def test_a_kernel_refusal_is_not_worded_as_memory(tmp_path, capsys):
    # a target without shader-f16 cannot run the f16 kernels a mixed_f16 LSTM needs: the
    # run is refused, naming the kernels and the feature, but it would fit
    rec = tmp_path / "f16.sml"
    text = (ROOT / "examples" / "lstm_forecaster.sml").read_text()
    rec.write_text(text.replace("seed: 0\n", "seed: 0\nprecision: mixed_f16\n"))
    assert main(["plan", str(rec), "--device", "webgpu-spec", "--json"]) == 2  # red
    plan = json.loads(capsys.readouterr().out)
    assert plan["verdict"] == "red" and plan["kernel_problems"] == plan["problems"]
    assert "lstm_seq, lstm_seq_backward: the fused LSTM step kernel" in plan["problems"][0]
    assert "'shader-f16'" in plan["problems"][0] and "memory" not in plan["problems"][0]
    why = str(PlanRefused(make_plan(mixed(example("lstm_forecaster")), resolve("webgpu-spec"))))
    assert "memory is not the problem" in why and "memory plan is red" not in why
    # with shader-f16 (lavapipe has it) the fused kernels run in f16: a green plan
    assert main(["plan", str(rec), "--device", "webgpu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "green"


def test_replay_residency_is_planned_and_can_be_turned_off(capsys):
    # train replays by default on WebGPU, so plan does: the schedule's buffers count; a
    # budget between the two peaks plans the eager steps the run then takes
    _, eager = plan_json(capsys, LSTM, "--device", "webgpu-spec", "--no-replay")
    _, replayed = plan_json(capsys, LSTM, "--device", "webgpu-spec")
    # the schedule holds a little over the eager step's peak, and an evaluation forward
    # runs beside it
    assert eager["replay_bytes"] == 0 and replayed["replay_bytes"] > eager["step_peak"]
    assert replayed["peak"] > max(eager["peak"], replayed["replay_bytes"])
    budget = str((eager["peak"] + replayed["peak"]) // 2)
    rc, tight = plan_json(capsys, LSTM, "--device", "webgpu-spec", "--budget", budget)
    assert rc == 0 and tight["verdict"] == "yellow" and tight["peak"] == eager["peak"]
    assert tight["replay_bytes"] == 0 and "eager steps" in tight["warnings"][-1]
    # the reference device runs its kernels from Python: nothing replays there
    _, ref = plan_json(capsys, LSTM, "--device", "reference")
    assert ref["replay_bytes"] == 0


@pytest.mark.webgpu
def test_replay_over_budget_falls_back_to_eager_steps_and_says_why(capsys, tmp_path):
    # a recorded schedule keeps the step's storages (and copies of its inputs) resident:
    # between its peak and the eager peak the run takes eager steps, and the plan names
    # both peaks
    # planned as the run below runs: without a validation pass
    _, rep = plan_json(capsys, LM, "--device", "webgpu", "--budget", "8GiB", "--no-validate")
    _, eager = plan_json(capsys, LM, "--device", "webgpu", "--budget", "8GiB", "--no-replay",
                         "--no-validate")  # fmt: skip
    # the eager steps' pool keeps about what the schedule holds: the gap is small
    assert eager["peak"] < rep["peak"] < eager["peak"] * 2
    budget = str((eager["peak"] + rep["peak"]) // 2)  # bytes
    rc, p = plan_json(capsys, LM, "--device", "webgpu", "--budget", budget, "--no-validate")
    assert rc == 0 and p["verdict"] == "yellow" and p["peak"] == eager["peak"]
    assert any("replayed steps would hold" in w and "eager steps" in w for w in p["warnings"])
    rc = main(["train", LM, "--device", "webgpu", "--budget", budget, "--max-steps", "2",
               "--no-validate", "--json", "--store", str(tmp_path)])  # fmt: skip
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    assert rc == 0
    plan = next(e for e in events if e.get("kind") == "plan")
    assert plan["verdict"] == "yellow" and plan["peak"] == eager["peak"]
    assert plan["replay_bytes"] == 0 and plan["warnings"] == p["warnings"]
    assert [e["step"] for e in events if e.get("kind") == "log"] == [1, 2]
    end = next(e for e in events if e.get("kind") == "end")
    assert end["replay"] is None  # no recorded schedule ran
