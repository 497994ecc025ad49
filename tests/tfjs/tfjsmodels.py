"""TF.js Layers models for the import tests, made by TF.js itself (``oracle.mjs`` under
node with the pure-JS @tensorflow/tfjs that scripts/setup.sh installs here): model.json
with weight shards and, beside each, ``io.json``: random inputs and TF.js' predictions."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CASES = ("mlp", "embed_lstm", "forecaster", "gru", "conv")
QUANTISED = ("mlp_uint8", "mlp_uint16", "mlp_float16", "conv_uint8", "conv_float16")


def make_models(out: Path) -> Path:
    """Every case of oracle.mjs written under ``out``."""
    if not (HERE / "node_modules" / "@tensorflow" / "tfjs").is_dir():
        raise RuntimeError("tests/tfjs/node_modules is missing: run scripts/setup.sh")
    node = shutil.which("node")
    subprocess.run([node, str(HERE / "oracle.mjs"), str(out)], check=True, capture_output=True,
                   timeout=300)  # fmt: skip
    return out


def io_of(folder: Path) -> tuple[np.ndarray, np.ndarray, bool]:
    """(input, TF.js' output, whether the input is token ids) of one case."""
    io = json.loads((folder / "io.json").read_text())
    dtype = np.int32 if io["ids"] else np.float32
    return np.asarray(io["input"], dtype), np.asarray(io["output"], np.float32), io["ids"]
