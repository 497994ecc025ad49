"""Command-line start-up benchmark: wall seconds per ``scellis`` command, median of N runs.

Usage::

    PYTHONPATH=src python3 bench/cli_start.py               # 15 runs of each command
    PYTHONPATH=src python3 bench/cli_start.py --runs 30 --json out.json

Each run is a fresh interpreter (``python -m scellis.cli.main ...`` in a subprocess, as
the ``scellis`` script starts), timed from spawn to exit, so interpreter start, imports,
the command's own work and exit are all included. The commands are the ones a user meets
first and that do little work: ``--help``, ``--version``, ``validate`` on an example
record, the ``catalog`` listing and the ``runs`` listing of a small store made once up
front. A bare ``python -c pass`` row gives the floor the interpreter itself sets. Runs
of the commands are interleaved, so a burst of load on a shared machine touches all rows
alike. Beside the wall time, the CPU time the child used (user + system, from
``getrusage``): on a loaded machine the wall time waits for other processes, the CPU time
does not, so it is the figure to compare across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "examples" / "lstm_forecaster.sml"


def commands(store: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "scellis.cli.main"]
    return {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "scellis --help": [*cli, "--help"],
        "scellis --version": [*cli, "--version"],
        "scellis validate examples/lstm_forecaster.sml": [*cli, "validate", str(RECORD)],
        "scellis catalog": [*cli, "catalog"],
        "scellis runs": [*cli, "runs", "--store", str(store)],
    }


def make_store(env: dict, root: Path) -> Path:
    """A store with one short reference run, so ``runs`` lists a real row."""
    store = root / "store"
    cmd = [sys.executable, "-m", "scellis.cli.main", "train", str(RECORD), "--device",
           "reference", "--epochs", "1", "--store", str(store), "--json"]  # fmt: skip
    subprocess.run(cmd, env=env, cwd=root, check=True, capture_output=True)
    return store


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def time_once(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``argv``."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    elapsed, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.decode()[-400:]}")
    return elapsed, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="timed runs of each command")
    ap.add_argument("--json", default=None, help="also write the medians here")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        todo = commands(make_store(env, root))
        for argv in todo.values():  # one untimed run each: byte-code caches written
            time_once(argv, env, root)
        walls: dict[str, list[float]] = {name: [] for name in todo}
        cpus: dict[str, list[float]] = {name: [] for name in todo}
        for _ in range(args.runs):
            for name, argv in todo.items():
                wall, cpu = time_once(argv, env, root)
                walls[name].append(wall)
                cpus[name].append(cpu)
    wall_med = {name: statistics.median(s) for name, s in walls.items()}
    cpu_med = {name: statistics.median(s) for name, s in cpus.items()}
    width = max(map(len, wall_med))
    print(f"{'command':<{width}}  wall s (median; min, max over {args.runs} runs)  CPU s (median)")
    for name, s in walls.items():
        print(f"{name:<{width}}  {wall_med[name]:6.3f}  ({min(s):.3f}, {max(s):.3f})"
              f"  {cpu_med[name]:14.3f}")  # fmt: skip
    if args.json:
        out = {"runs": args.runs, "wall_median_s": wall_med, "cpu_median_s": cpu_med}
        Path(args.json).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
