"""Seconds `scellis predict` takes over a long series natively: the native side of the
tab's "Show forecast" (bench/browser_forecast.py), for a real GPU where the browser
bench cannot run.

The same generated daily series (``--rows`` values: trend, weekly cycle, noise) gets the
record ``scellis init --data`` writes for it and trains ``--steps`` steps on the
reference device (the weights do not change the work a forecast does). Then
``scellis predict RUN --horizon H`` runs ``--repeats`` times on ``--device``: one-step
predictions over every window of the series, the recursive forecast past its end, and
the CSV written. The first call pays the kernels' compiles; the later ones do not.

    PYTHONPATH=src python3 bench/native_forecast.py --device webgpu [--rows 8934]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from browser_forecast import write_series  # noqa: E402 - the browser bench's series

from scellis.cli.main import main as scellis  # noqa: E402


def quiet(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        if scellis(argv) != 0:
            raise SystemExit(f"scellis {argv[0]} failed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="webgpu")
    ap.add_argument("--rows", type=int, default=8934)
    ap.add_argument("--horizon", type=int, default=12)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="scellis-forecast-"))
    write_series(work / "s.csv", args.rows)
    rec, store = work / "m.sml", str(work / "store")
    quiet(["init", str(rec), "--data", str(work / "s.csv")])
    quiet(["train", str(rec), "--device", "reference", "--store", store,
           "--max-steps", str(args.steps), "--no-validate"])  # fmt: skip
    from scellis.store.records import Records

    records = Records(store)
    try:
        (run,) = records.runs()
    finally:
        records.close()
    times = []
    for i in range(args.repeats):
        t0 = time.perf_counter()
        quiet(["predict", run["id"], "--store", store, "--horizon", str(args.horizon),
               "--device", args.device, "--out", str(work / f"p{i}.csv")])  # fmt: skip
        times.append(time.perf_counter() - t0)
        print(f"predict {i + 1} on {args.device}: {times[-1]:.2f} s", flush=True)
    out = {"device": args.device, "rows": args.rows, "horizon": args.horizon, "seconds": times}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
