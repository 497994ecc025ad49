"""Hostile ONNX models: external data named over and over.

Each initializer may keep its bytes in a file beside the model. A model of a kilobyte
that names one large file for each of many tensors would read it once per name: the
bytes read must stay within what the files hold, so two tensors may not share a range.
"""

from __future__ import annotations

import os

import pytest
from hostile import refuse

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from scellis.cli.main import main  # noqa: E402

N = 4096  # floats per tensor


@pytest.fixture(scope="module", autouse=True)
def _loaded(tmp_path_factory):
    """The import command's modules loaded before any refusal is timed."""
    d = tmp_path_factory.mktemp("warm")
    (d / "w.bin").write_bytes(os.urandom(4 * N))
    main(["import", str(_model(d, [0])), "--store", str(d / "s")])


def _model(folder, spans):
    """A chain of Adds whose i-th operand is N floats of w.bin at byte offset spans[i]."""
    inits, nodes, prev = [], [], "x"
    for i, offset in enumerate(spans):
        t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[N])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "w.bin"), ("offset", str(offset)), ("length", str(4 * N))):
            e = t.external_data.add()
            e.key, e.value = k, v
        inits.append(t)
        nodes.append(helper.make_node("Add", [prev, f"w{i}"], [f"y{i}"]))
        prev = f"y{i}"
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [N]) for n in ("x", prev)]
    g = helper.make_graph(nodes, "g", io[:1], io[1:], inits)
    path = folder / "m.onnx"
    path.write_bytes(helper.make_model(g).SerializeToString())
    return path


def test_tensors_reading_the_same_bytes_are_refused(tmp_path, capsys):
    (tmp_path / "w.bin").write_bytes(os.urandom(4 * N + 8))
    path = _model(tmp_path, [0] * 64 + [8])
    refuse(capsys, ["import", path, "--store", tmp_path / "s"], "another tensor reads too")


def test_tensors_at_their_own_ranges_of_one_file_are_read(tmp_path):
    from scellis.codecs.onnx.proto import model

    data = os.urandom(8 * N)
    (tmp_path / "w.bin").write_bytes(data)
    got = model(_model(tmp_path, [4 * N, 0]).read_bytes(), tmp_path).graph.initializers
    assert got["w0"].data == data[4 * N :] and got["w1"].data == data[: 4 * N]


def test_megabytes_of_typed_values_are_refused_before_decoding(tmp_path, capsys):
    # int64_data decodes one Python int per byte or so: a 20 MB field took over a minute
    n = 3_000_000
    t = TensorProto(name="w", data_type=TensorProto.INT64, dims=[n])
    t.int64_data.extend([7] * n)
    io = [helper.make_tensor_value_info(k, TensorProto.INT64, [n]) for k in ("x", "y")]
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", io[:1], io[1:], [t])
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(g).SerializeToString())
    refuse(capsys, ["import", path, "--store", tmp_path / "s"], "outside raw_data", seconds=2.0)


def test_megabytes_of_attribute_values_are_refused_before_decoding(tmp_path, capsys):
    n = 3_000_000
    node = helper.make_node("Transpose", ["x"], ["y"], perm=[0] * n)
    io = [helper.make_tensor_value_info(k, TensorProto.FLOAT, [2, 2]) for k in ("x", "y")]
    path = tmp_path / "m.onnx"
    g = helper.make_graph([node], "g", io[:1], io[1:])
    path.write_bytes(helper.make_model(g).SerializeToString())
    refuse(capsys, ["import", path, "--store", tmp_path / "s"], "outside raw_data", seconds=2.0)
