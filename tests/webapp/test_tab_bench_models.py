"""The tab benchmark's models: sizes, shape overrides and the numbers the tf.js side gets.

The parameter count is checked against torch's count of the same decoder (embedding,
learned positions, pre-norm blocks with biased q/k/v/o and a 4x MLP, final norm, untied
head without bias), which is what the tf.js page builds too.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest
from tabbench import models as bench_models

from scellis.base.errors import ScellisError
from scellis.devices.base import get_device
from scellis.devices.webgpu.gpu import LIMIT_NAMES

REPO = Path(__file__).resolve().parents[2]


def _torch_decoder_params(cfg: dict) -> int:
    torch = pytest.importorskip("torch")
    d, V = cfg["d"], cfg["vocab"]
    layer = torch.nn.TransformerEncoderLayer(
        d, cfg["heads"], 4 * d, activation="gelu", norm_first=True, batch_first=True
    )
    stack = torch.nn.TransformerEncoder(layer, cfg["layers"], enable_nested_tensor=False)
    parts = [
        torch.nn.Embedding(V, d), stack, torch.nn.LayerNorm(d), torch.nn.Linear(d, V, bias=False)
    ]  # fmt: skip
    return sum(p.numel() for m in parts for p in m.parameters()) + cfg["T"] * d


@pytest.mark.parametrize("name", ["char_tf", "tf_d384"])
def test_transformer_parameter_count_matches_torch(name):
    r = random.Random(name)
    shape = {"d": 8 * r.randint(1, 4), "heads": 2, "layers": r.randint(1, 3), "T": r.randint(4, 9)}
    cfg = bench_models.config(name, shape)
    net, _ = bench_models.build(cfg, get_device("reference"))
    assert bench_models.parameter_count(net) == _torch_decoder_params(cfg)


def test_full_size_counts_are_the_documented_models():
    for name in ("char_tf", "tf_d384"):
        cfg = bench_models.config(name)
        d, L, V, T = cfg["d"], cfg["layers"], cfg["vocab"], cfg["T"]
        per_block = 4 * (d * d + d) + 2 * (4 * d * d) + 4 * d + d + 4 * d
        assert _torch_decoder_params(cfg) == V * d * 2 + T * d + L * per_block + 2 * d


@pytest.mark.parametrize(
    "shape, says",
    [({"hidden": 4}, "no size 'hidden'"), ({"d": 0}, "whole number"), ({"d": 30}, "multiple")],
)
def test_bad_shapes_are_refused(shape, says):
    with pytest.raises(ScellisError, match=says):
        bench_models.config("char_tf", shape)
    with pytest.raises(ScellisError, match="must be one of"):
        bench_models.config("gpt5")


def test_browser_benches_send_the_same_numbers():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from browser_workloads import TINY, TRANSFORMERS
    finally:
        sys.path.remove(str(REPO / "bench"))
    for name, cfg in TRANSFORMERS.items():
        assert bench_models.CONFIGS[name] == cfg
    for name, shape in TINY.items():
        bench_models.config(name, shape)  # every smoke size is a valid override


def test_worker_asks_for_the_limits_python_would():
    src = (REPO / "web" / "worker.js").read_text()
    block = re.search(r"const DEVICE_LIMITS = \[(.*?)\];", src, re.S).group(1)
    asked = set(re.findall(r'"(\w+)"', block))
    words = [n.split("_") for n in LIMIT_NAMES]
    camel = {w[0] + "".join(x.capitalize() for x in w[1:]) for w in words}
    assert asked == camel - {"minStorageBufferOffsetAlignment"}
