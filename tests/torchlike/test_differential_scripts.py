"""torch-style scripts run twice: with torch, and with scellis swapped in by imports.

Each file in ``scripts/`` is written for torch (``import torch``, ``torch.nn``,
``torch.utils.data``). It runs once as written and once with those imports answered
by scellis (``scellis``, ``scellis.nn``, ``scellis.data``), nothing else changed; the
scellis model starts from the torch model's weights (``load_state_dict`` of its
``state_dict``), and every step's loss must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from swapped import load_script  # the only change: where the imports come from

import scellis

pytestmark = pytest.mark.torch


def _data() -> dict:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((24, 6)).astype(np.float32)
    t = np.sin(np.linspace(0, 12, 40)).astype(np.float32) + 0.1 * rng.standard_normal(40)
    return {
        "x": x,
        "y": (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64),
        "t": (x[:, :5].sum(1) * 0.3).astype(np.float32),
        "series": t.astype(np.float32),
        "tokens": rng.integers(0, 11, 64).astype(np.int64),
        "seq": rng.standard_normal((6, 5, 3)).astype(np.float32),
        "wave": rng.standard_normal((6, 2, 10)).astype(np.float32),
        "label": np.array([0, 1, 2, 3, 1, 0]) % 3,
        "images": rng.standard_normal((6, 3, 8, 8)).astype(np.float32),
        # draws a script would make with torch.randn / randperm, made once here instead
        "noise": rng.standard_normal((8, 24, 3)).astype(np.float32),
        "perm": np.stack([rng.permutation(18) for _ in range(4)]),
    }


CASES = {  # script: (steps, extra keyword arguments)
    "mlp_adamw": (8, {}),
    "manual_sgd": (12, {}),
    "lstm_forecast": (8, {"path": True}),
    "char_attention": (6, {}),
    "encoder_layer": (6, {}),
    "conv_gru": (6, {}),
    "habits_mix": (8, {}),
    "vae": (6, {}),
    "word_lm": (6, {}),
    "plateau_regression": (5, {}),
    "multilabel": (6, {}),
    "param_groups": (6, {}),
    "seq2seq_gru": (6, {}),
    "onecycle_windows": (8, {}),
    "grad_accum": (4, {}),
    "cifar_cnn": (6, {}),
    "custom_function": (8, {}),
    "dcgan": (4, {}),
    "denoise_ae": (3, {}),
    "name_rnn": (8, {}),
    "translate_transformer": (5, {}),
    "padded_text": (6, {}),
    "upsample_cnn": (5, {}),
    "init_containers": (5, {}),
    "freeze_resume": (4, {}),
    "masked_tagger": (4, {}),
    "contrastive_embed": (4, {}),
    "packed_bilstm": (4, {}),
    "dict_batches": (5, {}),
    "phases_loop": (3, {}),
    "mnist_example": (2, {}),
    "mha_classifier": (5, {}),
    "curve_fit_lbfgs": (3, {}),
    "tied_lm": (5, {}),
    "autoencoder_rows": (4, {}),
    "numpy_split_metrics": (3, {}),
    "distill": (4, {}),
    "legacy_style": (4, {}),
    "attention_names": (6, {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_script_matches_torch_step_for_step(name, tmp_path):
    steps, extra = CASES[name]
    data = _data()
    if name == "encoder_layer":
        data["label"] = np.array([0, 1, 2, 3, 1, 0])
    theirs_ns, ours_ns = load_script(name, False), load_script(name, True)
    assert ours_ns["torch"] is scellis  # the same source, scellis behind its imports
    torch.manual_seed(0)
    theirs = theirs_ns["build"]()
    ours = ours_ns["build"]()
    ours.load_state_dict(theirs.state_dict())
    kw_t = {"path": str(tmp_path / "t.pt")} if extra.get("path") else {}
    kw_s = {"path": str(tmp_path / "s.pt")} if extra.get("path") else {}
    want = theirs_ns["train"](theirs, data, steps, **kw_t)
    got = ours_ns["train"](ours, data, steps, **kw_s)
    assert len(got) == len(want)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)
