"""The run panel's sample chart names the window and horizon the record has now (its
title comes from the engine's labels of the record, run under node on the panel's own
module): a horizon set in the data panel shows there, and a one-step record says so."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

from scellis.sml import parse
from scellis.webapp import model_api

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()
SAMPLES = ROOT / "web" / "src" / "run" / "samples.js"


def _title(labels: dict) -> str:
    node = shutil.which("node")
    assert node, "node is needed for the front-end checks"
    script = (
        f"import {{ sampleSpan }} from {json.dumps(SAMPLES.as_uri())};"
        f"console.log(sampleSpan({json.dumps(labels)}));"
    )
    out = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True,
                         text=True, timeout=60, check=True)  # fmt: skip
    return out.stdout.strip()


def _weekly(rng: random.Random, n: int = 120) -> str:
    start = datetime(rng.randrange(2000, 2020), 1, 2)
    rows = ["date,load_mw"] + [
        f"{(start + timedelta(weeks=i)).date()},{rng.uniform(300, 900):.2f}" for i in range(n)
    ]
    return "\n".join(rows) + "\n"


def test_the_sample_title_follows_the_window_and_horizon(tmp_path):
    rng = random.Random()
    window, horizon = rng.randrange(8, 16), rng.randrange(2, 6)
    out = model_api.dataset_from(LSTM, "load.csv", _weekly(rng), column="load_mw",
                                 datetime="date", folder=str(tmp_path),
                                 options={"window": window, "horizon": horizon})  # fmt: skip
    data = parse(out["record"], "m.sml").data["data"]  # the oracle: the pinned section
    title = _title(model_api.labels(out["record"]))
    assert title == (f"validation, one week ahead after {data['window']} weeks: "
                     f"the first of a {data['horizon']}-week horizon")  # fmt: skip
    # the example as shipped: one year ahead of 20, no horizon to speak of
    own = parse(LSTM, "m.sml").data["data"]
    assert own["horizon"] == 1
    want = f"validation, one year ahead after {own['window']} years"
    assert _title(model_api.labels(LSTM)) == want
