"""Milliseconds per step: an exported torch-train package under torchrun vs Scellis itself.

For each example record: `scellis export RECORD --to torch-train` writes a PyTorch
package, `torchrun --nproc_per_node N train.py` runs it (NCCL on GPUs, gloo on CPUs), and
`scellis train` runs the same record (eager, and replayed with ``--replay``). Every
process prints one JSON line per step; this script stamps each line as it arrives and
reports the steady-state milliseconds per step after ``--warmup`` steps, so start-up
(imports, shader compiles, CUDA context) is left out of all of them alike. The first
losses are printed beside the times: with one process the two implementations follow the
same data order, so they should agree to f32 rounding.

Scale-out: ``--nproc 1,2,4,8`` and ``--strategy ddp,fsdp`` time the package at each process
count (one GPU a process under NCCL). train.py splits every batch of the record across the
processes (strong scaling: the global batch stays the record's), so samples/s is the
record's batch over the step time and the scaling efficiency at N is
``ms(1) / (N * ms(N))``. The N-process losses must follow the one-process run: the
gradient is the same mean, summed in another order (each rank's share, then the
all-reduce), which moves f32 results by a few ulps a step; ``LOSS_RTOL`` is the bound
checked over the first ``--compare`` logged losses.

    python bench/torch_train.py --device webgpu --nproc 1 --steps 200
    python bench/torch_train.py --nproc 1,2,4,8 --strategy ddp,fsdp --no-scellis --records \
        examples/lstm_forecaster.sml,examples/char_transformer.sml,bench/records/tf_d768.sml
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {"lstm_forecaster": 200, "char_transformer": 150, "tf_d768": 60}
RECORDS = ["examples/lstm_forecaster.sml", "examples/char_transformer.sml"]
# a different reduction order of the same mean gradient, compounded over a few Adam steps
LOSS_RTOL = 1e-4


def stamp(cmd: list[str], warmup: int, env: dict, keep: int = 3) -> dict:
    """Run ``cmd``; time the JSON log lines with a loss; ms per step after ``warmup``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    arrived, losses = {}, {}
    for line in proc.stdout:
        now = time.perf_counter()
        try:
            event = json.loads(line)
        except ValueError:
            continue
        step = event.get("step")
        if isinstance(step, int) and event.get("loss") is not None:
            if event.get("kind", "log") == "log":
                arrived.setdefault(step, now)
                losses.setdefault(step, event["loss"])
    err = proc.stderr.read()
    proc.wait()
    steps = sorted(arrived)
    out = {"rc": proc.returncode, "steps": len(steps)}
    if len(steps) <= warmup + 2:
        return {**out, "error": err[-1500:]}
    first, last = steps[warmup], steps[-1]
    ms = (arrived[last] - arrived[first]) * 1000 / (last - first)
    return {**out, "ms_per_step": round(ms, 3), "first_losses": [losses[s] for s in steps[:keep]]}


def export(record: Path, work: Path) -> Path:
    pkg = work / record.stem
    if not pkg.exists():
        cmd = [sys.executable, "-m", "scellis.cli.main", "export", str(record), "--to",
               "torch-train", "--out", str(pkg)]  # fmt: skip
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return pkg


def torchrun(pkg: Path, nproc: int, strategy: str, steps: int, work: Path) -> list[str]:
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
        str(nproc), str(pkg / "train.py"), "--fresh", "--max-steps", str(steps),
        "--no-validate", "--log-every", "1", "--checkpoint-minutes", "1000",
        "--checkpoint-dir", str(work / f"ck_{pkg.name}_{strategy}_{nproc}"),
    ]  # fmt: skip
    return [*cmd, "--fsdp"] if strategy == "fsdp" else cmd


def scellis_runs(record: Path, steps: int, device: str, work: Path) -> dict[str, list[str]]:
    cmd = [
        sys.executable, "-m", "scellis.cli.main", "train", str(record), "--device", device,
        "--max-steps", str(steps), "--json", "--no-validate", "--log-every", "1",
    ]  # fmt: skip
    name = record.stem
    return {
        f"scellis {device} eager": [*cmd, "--store", str(work / f"s_{name}")],
        f"scellis {device} replay": [*cmd, "--store", str(work / f"r_{name}"), "--replay"],
    }


def batch_size(record: Path) -> int:
    from scellis.sml.loader import load

    return int(load(record.read_bytes(), str(record)).data.get("batch_size", 1))


def scaling(row: dict, single: dict | None, batch: int) -> dict:
    """samples/s, the efficiency against one process and the first losses' agreement."""
    ms = row.get("ms_per_step")
    if not ms:
        return row
    out = {**row, "samples_per_s": round(batch * 1000 / ms, 1)}
    if single and single.get("ms_per_step"):
        out["efficiency"] = round(single["ms_per_step"] / (row["nproc"] * ms), 3)
        a, b = row["first_losses"], single["first_losses"]
        worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))
        out["loss_rel_diff"] = worst
        out["losses_agree"] = worst <= LOSS_RTOL
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="webgpu", help="the Scellis device")
    ap.add_argument("--nproc", default="1", help="torchrun process counts, e.g. 1,2,4,8")
    ap.add_argument("--strategy", default="ddp", help="ddp, fsdp or both (ddp,fsdp)")
    ap.add_argument("--steps", type=int, default=0, help="steps per run (0: each record's own)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--compare", type=int, default=3, help="first losses compared across N")
    ap.add_argument("--records", default=",".join(RECORDS), help="SML records, comma-separated")
    ap.add_argument("--examples", help="example names (examples/NAME.sml), instead of --records")
    ap.add_argument("--no-scellis", action="store_true", help="time the torch package only")
    args = ap.parse_args()
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    sys.path.insert(0, str(ROOT / "src"))
    env = {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
    env.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    names = args.examples.split(",") if args.examples else None
    records = [ROOT / "examples" / f"{n}.sml" for n in names] if names else [
        ROOT / r for r in args.records.split(",")]  # fmt: skip
    counts = [int(n) for n in args.nproc.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for record in records:
            steps = args.steps or EXAMPLES.get(record.stem, 100)
            batch, pkg = batch_size(record), export(record, work)
            for strategy in args.strategy.split(","):
                single = None
                for n in counts:
                    cmd = torchrun(pkg, n, strategy, steps, work)
                    row = {"record": record.stem, "run": f"torchrun {strategy}", "nproc": n,
                           **stamp(cmd, args.warmup, env, args.compare)}  # fmt: skip
                    single = row if n == 1 else single
                    print(json.dumps(scaling(row, single if n > 1 else None, batch)), flush=True)
            if args.no_scellis:
                continue
            for label, cmd in scellis_runs(record, steps, args.device, work).items():
                row = {"record": record.stem, "run": label, **stamp(cmd, args.warmup, env)}
                print(json.dumps(scaling(row, None, batch)), flush=True)


if __name__ == "__main__":
    main()
