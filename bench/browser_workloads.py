"""The browser benches' Transformer workloads (bench/browser_train_step.py, bench/browser_gpu.py).

The numbers equal tabbench.models.CONFIGS (bench/tab) (the Scellis side builds its model
from the name there); the tf.js page builds the same decoder from the dict sent to it
(``kind: tf``, bench/browser/tfjs_transformer.js). This file is standalone: it travels in
the GPU payload next to browser_gpu.py, where scellis is not installed.

``TINY`` holds the sizes of a smoke check on a CPU WebGPU adapter (SwiftShader): the same
structure (every kernel of the step) at a size that steps in seconds there.
"""

from __future__ import annotations

TRANSFORMERS = {
    "char_tf": {"kind": "tf", "batch": 32, "T": 64, "d": 128, "layers": 2, "heads": 4,
                "vocab": 96, "lr": 1e-3},
    "tf_d384": {"kind": "tf", "batch": 32, "T": 256, "d": 384, "layers": 6, "heads": 6,
                "vocab": 96, "lr": 1e-3},
}  # fmt: skip
TINY = {
    "char_tf": {"batch": 4, "T": 16, "d": 32, "layers": 1, "heads": 2},
    "tf_d384": {"batch": 2, "T": 16, "d": 48, "layers": 1, "heads": 6},
    "lstm2x64": {"batch": 8, "T": 8, "hidden": 16},
}


def sized(cfg: dict, model: str, tiny: bool) -> tuple[dict, dict]:
    """(the config the tf.js page gets, the ``shape`` override the Scellis side gets)."""
    shape = dict(TINY.get(model, {})) if tiny else {}
    return {**cfg, **shape}, shape
