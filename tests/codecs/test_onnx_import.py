"""ONNX import: records from torch.onnx.export'ed models, outputs checked with onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from onnx_models import MLP, CharModel, Forecaster, Sequence, Unsupported, export  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.base.errors import ScellisError  # noqa: E402
from scellis.codecs import read  # noqa: E402
from scellis.codecs.weights import load_into  # noqa: E402
from scellis.model import RecordModel  # noqa: E402

CASES = {
    "mlp2d": (MLP, (5, 3)),
    "mlp3d": (MLP, (2, 4, 3)),  # exported as MatMul + Add
    "lstm": (lambda: Forecaster(torch.nn.LSTM), (3, 6, 2)),
    "gru": (lambda: Forecaster(torch.nn.GRU, layers=3), (3, 5, 2)),
    "gru_seq": (Sequence, (2, 4, 3)),
    "char_ids": (CharModel, (2, 7)),  # int64 token ids
}


def _ort(path, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _draw(rng, shape, case: str) -> np.ndarray:
    if case == "char_ids":
        return rng.integers(0, 20, shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


def _ours(imported, x: np.ndarray, device: str) -> np.ndarray:
    m = RecordModel(imported.record, device=device).eval()
    load_into(m, imported.tensors)
    kind = "i32" if x.dtype.kind == "i" else "f32"
    y = m(sc.tensor(x.astype(np.int32) if kind == "i32" else x, device=device, dtype=kind))
    return np.asarray(y.tolist(), dtype=np.float32)


def _model(tmp_path, case: str, seed: int = 0):
    make, shape = CASES[case]
    torch.manual_seed(seed)
    model = make()
    path = tmp_path / f"{case}.onnx"
    export(model, torch.from_numpy(_draw(np.random.default_rng(seed), shape, case)), path)
    return model, path, shape


@pytest.mark.parametrize("case", list(CASES))
def test_matches_onnxruntime_on_reference(tmp_path, case):
    model, path, shape = _model(tmp_path, case)
    got = read(path)
    assert got.codec == "codec/onnx"
    # weights keep torch's names (blocks are named after the exporting modules)
    sd = model.state_dict()
    for k, t in got.tensors.items():
        assert k in sd, k
        np.testing.assert_array_equal(np.frombuffer(t.data, "<f4").reshape(t.shape), sd[k].numpy())
    assert set(got.tensors) == set(sd)
    rng = np.random.default_rng(len(case))
    for batch in (shape[0], shape[0] + 2):  # the batch axis stays free
        x = _draw(rng, (batch, *shape[1:]), case)
        np.testing.assert_allclose(_ours(got, x, "reference"), _ort(path, x), rtol=2e-5, atol=2e-6)


def test_record_text_validates_and_names_the_blocks(tmp_path):
    _, path, _ = _model(tmp_path, "lstm")
    got = read(path)
    rec = got.record
    assert list(rec["blocks"]) == ["rnn", "head"]
    assert rec["blocks"]["rnn"] == {
        "block_id": "nn/lstm", "in": "x", "input_size": 2, "hidden_size": 5,
        "num_layers": 2, "output": "last",
    }  # fmt: skip
    assert rec["inputs"]["x"]["shape"] == ["batch", 6, 2]
    text = got.metadata["sml"]
    assert sc.sml.parse(text).data["blocks"] == rec["blocks"]
    mlp = read(_model(tmp_path, "mlp2d")[1]).record["blocks"]
    assert mlp["ln"]["eps"] == 1e-6 and mlp["b"]["bias"] is False
    assert [b["function"] for b in mlp.values() if b["block_id"] == "nn/activation"] == [
        "relu", "gelu", "tanh", "sigmoid",
    ]  # fmt: skip


@pytest.mark.webgpu
@pytest.mark.parametrize("case", ["mlp3d", "lstm", "gru"])
def test_matches_onnxruntime_on_webgpu(tmp_path, case):
    from scellis.base.errors import DeviceError
    from scellis.devices import get_device

    try:
        get_device("webgpu")
    except DeviceError as e:
        pytest.skip(f"no WebGPU adapter: {e}")
    _, path, shape = _model(tmp_path, case, seed=1)
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(_ours(read(path), x, "webgpu"), _ort(path, x), rtol=1e-4, atol=1e-5)


def test_unsupported_ops_are_listed_by_node(tmp_path):
    path = tmp_path / "attn.onnx"
    export(Unsupported(), torch.randn(2, 3, 4), path)
    listed = r"unsupported ONNX ops: CumSum \(node /CumSum\), MaxPool"
    with pytest.raises(ScellisError, match=listed):
        read(path)


def _with_external(tmp_path, location: str, **entries):
    from onnx import numpy_helper

    torch.manual_seed(0)
    path = tmp_path / "ext" / "m.onnx"
    path.parent.mkdir(parents=True)
    export(MLP(), torch.randn(2, 3), path)
    m = onnx.load(str(path))
    init = m.graph.initializer[0]
    data = numpy_helper.to_array(init).tobytes()
    init.ClearField("raw_data")
    init.data_location = onnx.TensorProto.EXTERNAL
    fields = {"location": location, "offset": "0", "length": str(len(data)), **entries}
    for k, v in fields.items():
        e = init.external_data.add()
        e.key, e.value = k, v
    onnx.save(m, str(path))
    return path, data


def test_external_data_inside_the_folder_is_read(tmp_path):
    path, data = _with_external(tmp_path, "weights.bin")
    (path.parent / "weights.bin").write_bytes(data)
    x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(
        _ours(read(path), x, "reference"), _ort(path, x), rtol=2e-5, atol=2e-6
    )


@pytest.mark.parametrize("where", ["../outside.bin", "/etc/passwd", "sub/../../outside.bin"])
def test_external_data_leaving_the_folder_is_refused(tmp_path, where):
    path, data = _with_external(tmp_path, where)
    (tmp_path / "outside.bin").write_bytes(data)
    with pytest.raises(ScellisError, match="outside the model's folder"):
        read(path)


def test_external_data_through_a_symlink_out_is_refused(tmp_path):
    path, data = _with_external(tmp_path, "weights.bin")
    (tmp_path / "outside.bin").write_bytes(data)
    (path.parent / "weights.bin").symlink_to(tmp_path / "outside.bin")
    with pytest.raises(ScellisError, match="outside the model's folder"):
        read(path)


@pytest.mark.parametrize(
    ("entries", "match"),
    [
        ({"length": str(10**15)}, "needs 96 bytes, its external data says"),
        ({"length": "9" * 5000}, "a whole number of bytes"),
        ({"offset": str(10**15)}, "holds 96 bytes"),
        ({"offset": "-4"}, "a whole number of bytes"),
        ({"checksum": "0" * 40}, "SHA-1 checksum"),
    ],
)
def test_external_data_that_lies_is_refused(tmp_path, entries, match):
    path, data = _with_external(tmp_path, "weights.bin", **entries)
    (path.parent / "weights.bin").write_bytes(data)
    assert len(data) == 96
    with pytest.raises(ScellisError, match=match):
        read(path)


def test_external_data_with_its_checksum_is_read(tmp_path):
    import hashlib

    _, data = _with_external(tmp_path / "a", "weights.bin")
    sha = hashlib.sha1(data).hexdigest()
    path, _ = _with_external(tmp_path / "b", "weights.bin", checksum=sha)
    (path.parent / "weights.bin").write_bytes(data)
    assert read(path).tensors


def test_external_data_that_is_not_a_regular_file_is_refused(tmp_path):
    import os

    path, _ = _with_external(tmp_path, "weights.bin")
    os.mkfifo(path.parent / "weights.bin")  # reading a FIFO with no writer would hang
    with pytest.raises(ScellisError, match="not a regular file"):
        read(path)
    path2, _ = _with_external(tmp_path / "d", "sub")
    (path2.parent / "sub").mkdir()
    with pytest.raises(ScellisError, match="not a regular file|Is a directory"):
        read(path2)


def test_truncated_and_garbage_files_are_refused(tmp_path):
    _, path, _ = _model(tmp_path, "mlp2d")
    data = path.read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ScellisError, match="protobuf|past the end"):
        read(cut)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07" + bytes(range(200)))
    with pytest.raises(ScellisError):
        read(junk)


def test_a_tiny_graph_cannot_fold_into_gigabytes(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    # Expand of one constant to [30000, 30000]: 900M numbers from a file of ~200 bytes
    init = [
        numpy_helper.from_array(np.array([30000, 30000], dtype=np.int64), "shape"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
        numpy_helper.from_array(np.ones((3, 2), dtype=np.float32), "w"),
    ]
    nodes = [
        helper.make_node("Expand", ["one", "shape"], ["big"]),
        helper.make_node("MatMul", ["x", "w"], ["y0"]),
        helper.make_node("Add", ["y0", "big"], ["y"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 2])
    g = helper.make_graph(nodes, "g", [x], [y], init)
    path = tmp_path / "bomb.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert path.stat().st_size < 512
    with pytest.raises(ScellisError, match="would fold a constant of 900000000 elements"):
        read(path)
