"""Milliseconds per step: an exported torch-train package under torchrun vs Scellis itself.

For each example record: `scellis export RECORD --to torch-train` writes a PyTorch
package, `torchrun --nproc_per_node N train.py` runs it (NCCL on GPUs, gloo on CPUs), and
`scellis train` runs the same record (eager, and replayed with ``--replay``). Every
process prints one JSON line per step; this script stamps each line as it arrives and
reports the steady-state milliseconds per step after ``--warmup`` steps, so start-up
(imports, shader compiles, CUDA context) is left out of all of them alike. The first
losses are printed beside the times: with one process the two implementations follow the
same data order, so they should agree to f32 rounding.

    python bench/torch_train.py --device webgpu --nproc 1 --steps 200
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
EXAMPLES = {"lstm_forecaster": 200, "char_transformer": 150}


def stamp(cmd: list[str], warmup: int, env: dict) -> dict:
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
    return {**out, "ms_per_step": round(ms, 3), "first_losses": [losses[s] for s in steps[:3]]}


def commands(name: str, steps: int, args, work: Path) -> dict[str, list[str]]:
    py = sys.executable
    pkg, record = work / name, str(ROOT / "examples" / f"{name}.sml")
    subprocess.run(
        [py, "-m", "scellis.cli.main", "export", record, "--to", "torch-train", "--out", str(pkg)],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    torch_run = [
        py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(args.nproc),
        str(pkg / "train.py"), "--fresh", "--max-steps", str(steps), "--no-validate",
        "--log-every", "1", "--checkpoint-minutes", "1000",
        "--checkpoint-dir", str(work / f"ck_{name}"),
    ]  # fmt: skip
    scellis = [
        py, "-m", "scellis.cli.main", "train", record, "--device", args.device,
        "--max-steps", str(steps), "--json", "--no-validate", "--log-every", "1",
    ]  # fmt: skip
    return {
        f"torchrun, {args.nproc} process(es)": torch_run,
        f"scellis {args.device} eager": [*scellis, "--store", str(work / f"s_{name}")],
        f"scellis {args.device} replay": [*scellis, "--store", str(work / f"r_{name}"), "--replay"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="webgpu", help="the Scellis device")
    ap.add_argument("--nproc", type=int, default=1, help="torchrun processes")
    ap.add_argument("--steps", type=int, default=0, help="steps per run (0: each example's own)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    args = ap.parse_args()
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
    env.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.examples.split(","):
            steps = args.steps or EXAMPLES[name]
            for label, cmd in commands(name, steps, args, Path(tmp)).items():
                row = {"example": name, "run": label, **stamp(cmd, args.warmup, env)}
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
