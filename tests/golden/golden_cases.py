"""The golden cases: each example model's rungs, lowered for the WebGPU spec's limits."""

from __future__ import annotations

from pathlib import Path

from scellis.ir.ladder import emit
from scellis.ir.limits import resolve
from scellis.ir.record import load_record

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "files"
MODELS = ("lstm_forecaster", "char_transformer")
CASES = [
    (model, rung, mode)
    for model in MODELS
    for rung, mode in (
        ("blocks", "inference"),
        ("ops", "inference"),
        ("ops", "training"),
        ("kernels", "inference"),
        ("kernels", "training"),
        ("schedule", "inference"),
        ("wgsl", "inference"),
    )
]


def path_of(model: str, rung: str, mode: str) -> Path:
    return HERE / f"{model}.{rung}.{mode}.txt"


def render(model: str, rung: str, mode: str):
    record = load_record(str(ROOT / "examples" / f"{model}.sml"))
    # a declared profile, not this machine's adapter: the text must not depend on the host
    return emit(record, rung, resolve("webgpu-spec"), mode=mode)
