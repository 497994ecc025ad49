"""Hostile TF.js quantised weights: memory that grows far past the shard's size.

A uint8-quantised weight is widened to float32: four bytes out for each byte in. As
one list of Python floats it took 32 bytes per byte of the shard (a 100 MB shard,
gigabytes), so it is widened a chunk at a time. Scales that put values outside
float32 are one message, not an overflow deep in the packing.
"""

from __future__ import annotations

import json
import os
import struct
import tracemalloc

import pytest
from folders import tfjs_doc
from hostile import refuse

from scellis.codecs import make

IN, UNITS = 500, 1000  # a 0.5 MB uint8 kernel


def _folder(tmp_path, scale: float, low: float):
    layers = [
        {"class_name": "InputLayer", "name": "x",
         "config": {"name": "x", "batch_input_shape": [None, IN]}},
        {"class_name": "Dense", "name": "d", "inbound_nodes": [[["x", 0, 0, {}]]],
         "config": {"name": "d", "units": UNITS, "activation": "linear", "use_bias": True}},
    ]  # fmt: skip
    q = {"dtype": "uint8", "scale": scale, "min": low}
    weights = [
        {"name": "d/kernel", "shape": [IN, UNITS], "dtype": "float32", "quantization": q},
        {"name": "d/bias", "shape": [UNITS], "dtype": "float32"},
    ]
    kernel, bias = os.urandom(IN * UNITS), struct.pack(f"<{UNITS}f", *[0.5] * UNITS)
    (tmp_path / "w.bin").write_bytes(kernel + bias)
    doc = tfjs_doc(layers, [["x", 0, 0]], [["d", 0, 0]], weights)
    (tmp_path / "model.json").write_text(json.dumps(doc))
    return kernel


def test_a_quantised_shard_is_widened_in_bounded_memory(tmp_path):
    kernel = _folder(tmp_path, 0.25, -3.0)
    tracemalloc.start()
    try:
        got = make("codec/tfjs").read(tmp_path / "model.json").tensors
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the output (2 MB), the shard and a chunk; as a list of floats it was over 20 MB
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MiB at peak"
    (t,) = [t for t in got.values() if t.numel == IN * UNITS]
    want = struct.pack(f"<{IN * UNITS}f", *[v * 0.25 - 3.0 for v in kernel])
    assert sorted(struct.unpack(f"<{IN * UNITS}f", t.data)) == sorted(
        struct.unpack(f"<{IN * UNITS}f", want)
    )


@pytest.mark.parametrize(("scale", "low"), [(1e37, 0.0), (1.0, -1e39)])
def test_scales_outside_float32_are_one_message(tmp_path, capsys, scale, low):
    _folder(tmp_path, scale, low)
    refuse(capsys, ["import", tmp_path / "model.json", "--store", tmp_path / "s"], "float32")
