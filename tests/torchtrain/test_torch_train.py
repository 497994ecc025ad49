"""``export --to torch-train``: a PyTorch package that trains as Scellis does, and back.

Small copies of the two examples (few units, short windows, few steps). Losses of the
exported ``train.py`` are compared with ``scellis train --device reference`` step by
step: both run in f32 with the same initial weights, batch order (Philox) and update
formulas, so they differ only by the rounding of different kernels (the reference
device's NumPy against torch's CPU kernels: sums in another order). Measured: the
first 8 losses agree to within 3e-7 relative; the tests allow 2e-5.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from scellis.cli.main import main  # noqa: E402
from scellis.data import load_data  # noqa: E402
from scellis.data.record import BUNDLED  # noqa: E402
from scellis.data.shuffle import shuffled_order  # noqa: E402

pytestmark = pytest.mark.torch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RTOL = 2e-5
CHAR_DATA = {"source": "bundled:python_help_topics.txt", "format": "text", "context": 16,
             "stride": 8, "max_chars": 4000, "val_fraction": 0.1}  # fmt: skip


def shrunk(name: str, folder: Path) -> Path:
    """A small copy of ``examples/<name>.sml`` in ``folder``."""
    text = (EXAMPLES / f"{name}.sml").read_text()
    if name == "lstm_forecaster":
        edits = [
            ("shape: [batch, 20, 1]", "shape: [batch, 10, 1]"),
            ("hidden_size: 32", "hidden_size: 8"),
            ("in_features: 32", "in_features: 8"),
            ("window: 20 ", "window: 10 "),
            ("batch_size: 32", "batch_size: 16"),
            ("every: 40,", "every: 10,"),
        ]
    else:
        vocab = len(load_data(CHAR_DATA).vocab)
        edits = [
            ("max_chars: 60000", "max_chars: 4000"),
            ("context: 32", "context: 16"),
            ("stride: 16", "stride: 8"),
            ("num_embeddings: 88", f"num_embeddings: {vocab}"),
            ("vocab_size: 88", f"vocab_size: {vocab}"),
            ("embedding_dim: 64", "embedding_dim: 16"),
            ("dim: 64", "dim: 16"),
            ("d_model: 64", "d_model: 16"),
            ("max_len: 32", "max_len: 16"),
            ("num_heads: 4", "num_heads: 2"),
            ("num_layers: 2", "num_layers: 1"),
            ("shape: [batch, 32]", "shape: [batch, 16]"),
            ("batch_size: 16", "batch_size: 8"),
        ]
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = folder / f"{name}.sml"
    path.write_text(text)
    return path


def scellis(capsys, *argv) -> list[dict]:
    code = main([*map(str, argv), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return [json.loads(x) for x in out.splitlines() if x.startswith("{")]


def train_py(pkg: Path, *args, procs: int = 1) -> list[dict]:
    """train.py's JSON lines, in one process or under torchrun with ``procs`` (gloo)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}
    cmd = [sys.executable, str(pkg / "train.py")]
    if procs > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={procs}", str(pkg / "train.py")]  # fmt: skip
    p = subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, timeout=300,
                       env=env, cwd=pkg.parent)  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    return [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]


def losses(events) -> list[float]:
    return [e["loss"] for e in events if e["kind"] == "log"]


def close(got, want) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert abs(a - b) <= RTOL * abs(b), (got, want)


def export(capsys, src, pkg: Path, *extra) -> Path:
    scellis(capsys, "export", src, "--to", "torch-train", pkg, *extra)
    return pkg


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"pkg_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_the_package_is_self_contained_and_reads_the_data_as_scellis(tmp_path, capsys):
    rec = shrunk("char_transformer", tmp_path)
    pkg = export(capsys, rec, tmp_path / "pkg")
    names = {p.name for p in pkg.iterdir()}
    assert {"model.py", "train.py", "pipeline.py", "optim.py", "ckpt.py", "record.sml",
            "config.json", "state_dict.pt", "data"} <= names  # fmt: skip
    assert (pkg / "record.sml").read_text() == rec.read_text()
    for py in pkg.glob("*.py"):
        for node in ast.walk(ast.parse(py.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                )
                assert not any((m or "").startswith("scellis") for m in mods), py.name
    pipeline = _module(pkg / "pipeline.py")  # plain Python: no torch needed
    cfg = json.loads((pkg / "config.json").read_text())
    ours = load_data(CHAR_DATA)
    theirs = pipeline.load_data(cfg["data"], base_dir=pkg)
    assert theirs.digest == ours.digest == cfg["dataset"]
    assert theirs.x_train == ours.x_train and theirs.y_val == ours.y_val
    for epoch in (0, 3):
        assert pipeline.shuffled_order(97, 5, epoch) == shuffled_order(97, 5, epoch)
    # the CSV connector too: the sunspots file beside the package's own data
    shutil.copy(BUNDLED / "sunspots_yearly.csv", pkg / "data")
    spec = {**_forecaster_data(), "horizon": 2, "stride": 3, "normalise": "minmax"}
    ours, theirs = load_data(spec), pipeline.load_data(spec)
    assert theirs.x_train == ours.x_train and theirs.y_val == ours.y_val
    assert theirs.stats == ours.stats and theirs.digest == ours.digest
    # windows framed by their own inputs, copied too; the seasonal difference's own key
    for mode, more in (("change", {}), ("window", {}), ("season", {"season": 6})):
        spec = {**_forecaster_data(), "horizon": 2, "normalise": mode, **more}
        ours, theirs = load_data(spec), pipeline.load_data(spec)
        assert theirs.x_train == ours.x_train and theirs.y_val == ours.y_val
        assert theirs.val_frames == ours.val_frames and theirs.digest == ours.digest


def test_the_packages_update_scalars_are_the_engines_for_every_update_op(tmp_path, capsys):
    from scellis.ops import optim as optim_ops  # noqa: PLC0415  (the oracle)

    pkg = export(capsys, shrunk("lstm_forecaster", tmp_path), tmp_path / "pkg")
    optim = _module(pkg / "optim.py")  # every update op's scalars are defined in it
    attrs = {"lr": 0.01, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "weight_decay": 0.1,
             "momentum": 0.5, "dampening": 0.0, "nesterov": False, "alpha": 0.99,
             "centered": False, "amsgrad": False, "lr_decay": 0.01, "momentum_decay": 0.004,
             "initial_accumulator_value": 0.1, "decoupled_weight_decay": False,
             "maximize": False, "first": True, "step": 3}  # fmt: skip
    assert set(optim._SCALARS) == set(optim_ops._SCALARS)
    for op in optim_ops._SCALARS:
        assert optim.scalars(op, attrs) == optim_ops.scalars(op, attrs), op


@pytest.mark.parametrize("name", ["lstm_forecaster", "char_transformer"])
def test_one_process_matches_a_scellis_run(tmp_path, capsys, name):
    rec = shrunk(name, tmp_path)
    k = 6
    want = losses(scellis(capsys, "train", rec, "--device", "reference", "--max-steps", k,
                          "--log-every", 1, "--store", tmp_path / "s"))  # fmt: skip
    pkg = export(capsys, rec, tmp_path / "pkg")
    got = losses(train_py(pkg, "--max-steps", k, "--log-every", 1))
    assert len(want) == k
    close(got, want)


PIPELINES = {
    "sgd-nesterov-step": "optimizer: { block_id: training/optimizer/sgd, lr: 0.05, momentum: 0.9, "
    "nesterov: true, weight_decay: 0.001 }\n"
    "scheduler: { block_id: training/scheduler/step, step_size: 2, gamma: 0.5 }\n",
    "rmsprop-centered-exponential": "optimizer: { block_id: training/optimizer/rmsprop, "
    "lr: 0.005, momentum: 0.5, centered: true }\n"
    "scheduler: { block_id: training/scheduler/exponential, gamma: 0.9 }\n"
    "grad_clip: { max_value: 0.5 }\n",
    "lion-warmup-cosine": "optimizer: { block_id: training/optimizer/lion, lr: 0.001, "
    "weight_decay: 0.1 }\n"
    "scheduler: { block_id: training/scheduler/warmup_cosine, warmup_steps: 2, total_steps: 6 }\n",
    "adam-amsgrad-one-cycle": "optimizer: { block_id: training/optimizer/adam, lr: 0.01, "
    "amsgrad: true, weight_decay: 0.01 }\n"
    "scheduler: { block_id: training/scheduler/one_cycle, total_steps: 10 }\n"
    "grad_clip: { max_norm: 0.5 }\n",
    # mode max on a mostly falling validation loss: most passes are a plateau, the rate halves
    "adam-reduce-on-plateau": "optimizer: { block_id: training/optimizer/adam, lr: 0.01 }\n"
    "scheduler: { block_id: training/scheduler/reduce_on_plateau, patience: 0, factor: 0.5, "
    "mode: max }\n",
}


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_optimizers_schedules_and_clipping_match(tmp_path, capsys, pipeline):
    """Other update rules (SGD with Nesterov momentum, centered RMSprop, Lion, AMSGrad
    with one_cycle's momentum), schedules (reduce_on_plateau fed each validation) and
    both clippings: the same losses and rates."""
    rec = shrunk("lstm_forecaster", tmp_path)
    text = rec.read_text().replace(
        "optimizer: { block_id: training/optimizer/adam, lr: 0.01 }\n", PIPELINES[pipeline]
    )
    assert "one_cycle" in text or pipeline != "adam-amsgrad-one-cycle"
    rec.write_text(text)
    k = 6
    ours = scellis(capsys, "train", rec, "--device", "reference", "--max-steps", k,
                   "--log-every", 1, "--eval-every", 1, "--store", tmp_path / "s")  # fmt: skip
    events = train_py(export(capsys, rec, tmp_path / "pkg"), "--max-steps", k, "--log-every", 1,
                      "--eval-every", 1)  # fmt: skip
    close(losses(events), losses(ours))
    lrs = [e["lr"] for e in events if e["kind"] == "log"]
    assert lrs == [e["lr"] for e in ours if e["kind"] == "log"]
    if "plateau" in pipeline:
        assert lrs[-1] < lrs[0] and all(b in (a, a * 0.5) for a, b in zip(lrs, lrs[1:]))


def test_early_stopping_stops_at_the_same_step(tmp_path, capsys):
    rec = shrunk("lstm_forecaster", tmp_path)  # mode max on a falling val_loss: it stops soon
    stops = "every: 1, early_stopping: { metric: val_loss, patience: 2, mode: max },"
    rec.write_text(rec.read_text().replace("every: 10,", stops))
    ours = scellis(capsys, "train", rec, "--device", "reference", "--max-steps", 20,
                   "--log-every", 1, "--store", tmp_path / "s")  # fmt: skip
    events = train_py(export(capsys, rec, tmp_path / "pkg"), "--max-steps", 20)

    def stop(evs):
        return next((e["step"], e["reason"]) for e in evs if e["kind"] == "early_stop")

    assert stop(events) == stop(ours) and stop(ours)[0] < 20
    assert events[-1]["steps"] == ours[-1]["steps"] == stop(ours)[0]
    close(losses(events), losses(ours))


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning", "ignore:invalid:RuntimeWarning")
def test_a_step_with_non_finite_gradients_is_skipped_as_scellis_skips_it(tmp_path, capsys):
    rec = shrunk("lstm_forecaster", tmp_path)  # a rate that blows the weights up at once
    rec.write_text(rec.read_text().replace("lr: 0.01 }", "lr: 1.0e+30 }"))
    ours = scellis(capsys, "train", rec, "--device", "reference", "--max-steps", 3,
                   "--log-every", 1, "--store", tmp_path / "s")  # fmt: skip
    events = train_py(export(capsys, rec, tmp_path / "pkg"), "--max-steps", 3, "--log-every", 1)

    def seen(evs):
        return [(e["loss"] is None, e["skipped_total"]) for e in evs if e["kind"] == "log"]

    assert seen(events) == seen(ours) == [(False, 0), (True, 1), (True, 2)]


def test_mixed_f16_runs_under_autocast_and_a_grad_scaler(tmp_path, capsys):
    """mixed_f16: torch.autocast(float16) and GradScaler. Scellis' reference device rounds
    every op's result to f16 while autocast keeps norms, softmax and the loss in f32, so
    the losses agree to about 1e-5 (measured), not to f32's last bits: 1e-3 is allowed."""
    rec = shrunk("char_transformer", tmp_path)
    rec.write_text(rec.read_text().replace("seed: 0", "seed: 0\nprecision: mixed_f16"))
    k = 4
    ours = scellis(capsys, "train", rec, "--device", "reference", "--max-steps", k,
                   "--log-every", 1, "--store", tmp_path / "s")  # fmt: skip
    events = train_py(export(capsys, rec, tmp_path / "pkg"), "--max-steps", k, "--log-every", 1)
    got, want = losses(events), losses(ours)
    assert len(got) == k and all(abs(a - b) <= 1e-3 * b for a, b in zip(got, want))
    scales = [e["loss_scale"] for e in events if e["kind"] == "log"]
    assert scales == [e["loss_scale"] for e in ours if e["kind"] == "log"] == [65536.0] * k


@pytest.mark.parametrize("name", ["lstm_forecaster", "char_transformer"])
def test_torchrun_two_processes_train_the_same_steps(tmp_path, capsys, name):
    rec = shrunk(name, tmp_path)
    # the char model learns within 8 steps; the forecaster's batch losses swing with the
    # solar cycle, so it runs two epochs and their mean losses are compared
    per_epoch = -(-len(load_data(_forecaster_data()).x_train) // 16)
    k = 8 if name == "char_transformer" else 2 * per_epoch
    ours = scellis(capsys, "train", rec, "--device", "reference", "--max-steps", k,
                   "--log-every", 1, "--store", tmp_path / "s")  # fmt: skip
    want = losses(ours)
    pkg = export(capsys, rec, tmp_path / "pkg")
    events = train_py(pkg, "--max-steps", k, "--log-every", 1, "--checkpoint-every", 4, procs=2)
    start = next(e for e in events if e["kind"] == "start")
    assert start["world"] == 2 and not start["fsdp"]
    got = losses(events)
    half = k // 2
    assert sum(got[half:]) / (k - half) < sum(got[:half]) / half  # it learns
    close(got, want)  # half a batch per process, weighted: the whole batch's gradient
    every = list(range(4, k + 1, 4))
    ends = every + ([k] if k % 4 else [])  # and one at the end
    assert [e["step"] for e in events if e["kind"] == "checkpoint"] == ends
    # validation where Scellis validates (the forecaster's eval.every: 10 steps; the char
    # model's epoch is longer than the run: its last step), batches split across processes
    evals = [(e["step"], e["val_loss"]) for e in events if e["kind"] == "eval"]
    want_evals = [(e["step"], e["val_loss"]) for e in ours if e["kind"] == "eval"]
    assert [s for s, _ in evals] == [s for s, _ in want_evals]
    assert [s for s, _ in evals] == ([8] if name == "char_transformer" else [10, 20, 30])
    close([v for _, v in evals], [v for _, v in want_evals])


def _forecaster_data() -> dict:
    return {"source": "bundled:sunspots_yearly.csv", "format": "csv", "column": "sunspots",
            "window": 10, "horizon": 1, "stride": 1, "val_fraction": 0.2}  # fmt: skip


def test_fsdp_checkpoint_continues_in_train_py_and_in_scellis(tmp_path, capsys):
    """train.py under FSDP to step 4; from that checkpoint, train.py (one process) and
    ``scellis import`` + ``scellis resume`` each take steps 5..8: the same losses."""
    rec = shrunk("char_transformer", tmp_path)
    pkg = export(capsys, rec, tmp_path / "pkg")
    events = train_py(pkg, "--max-steps", 4, "--log-every", 1, "--fsdp", procs=2)
    assert next(e for e in events if e["kind"] == "start")["fsdp"]
    ck = pkg / "checkpoints" / "step-00000004.safetensors"
    assert ck.is_file()
    events = train_py(pkg, "--max-steps", 8, "--log-every", 1)
    assert next(e for e in events if e["kind"] == "resume")["step"] == 4
    torch_next = losses(events)
    store = tmp_path / "store"
    got = scellis(capsys, "import", ck, "--store", store, "--device", "reference")[-1]
    assert got["codec"] == "torch-train" and got["step"] == 4
    ev = scellis(capsys, "resume", got["run"], "--store", store, "--max-steps", 8,
                 "--print-every", 1)  # fmt: skip
    assert next(e for e in ev if e["kind"] == "resume")["step"] == 4
    close(losses(ev), torch_next)
    assert ev[-1]["kind"] == "end" and ev[-1]["steps"] == 8


def test_a_run_exported_mid_way_continues_in_torch(tmp_path, capsys):
    """A Scellis run stopped at step 4, exported with its optimizer state and its own
    options (here: validate every 3 steps): train.py's steps 5..8 and its validations at
    steps 6 and 8 are the ones the Scellis run would have taken."""
    rec = shrunk("lstm_forecaster", tmp_path)
    store = tmp_path / "s"
    run = ["train", rec, "--device", "reference", "--log-every", 1, "--eval-every", 3]
    whole = scellis(capsys, *run, "--max-steps", 8, "--store", store)
    ev = scellis(capsys, *run, "--max-steps", 4, "--store", store)
    pkg = export(capsys, f"{ev[-1]['run']}@4", tmp_path / "pkg", "--store", store)
    assert (pkg / "checkpoints" / "step-00000004.safetensors").is_file()
    assert json.loads((pkg / "config.json").read_text())["options"]["eval_every"] == 3
    events = train_py(pkg, "--max-steps", 8)
    assert next(e for e in events if e["kind"] == "resume")["step"] == 4
    close(losses(events), losses(whole)[4:])
    evals = [(e["step"], e["val_loss"]) for e in events if e["kind"] == "eval"]
    want = [(e["step"], e["val_loss"]) for e in whole if e["kind"] == "eval" and e["step"] > 4]
    assert [s for s, _ in evals] == [s for s, _ in want] == [6, 8]  # 8: the last step
    close([v for _, v in evals], [v for _, v in want])


def test_an_optimizer_without_a_torch_twin_in_the_package_is_refused(tmp_path, capsys):
    rec = shrunk("lstm_forecaster", tmp_path)
    rec.write_text(rec.read_text().replace("training/optimizer/adam,", "training/optimizer/nadam,"))
    code = main(["export", str(rec), "--to", "torch-train", str(tmp_path / "pkg")])
    err = capsys.readouterr().err
    assert code == 2
    assert "optimizer 'nadam' has no torch-train export yet" in err and "Traceback" not in err
