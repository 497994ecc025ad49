"""safetensors through the codec, checked with the safetensors library; name maps onto records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
st = pytest.importorskip("safetensors.torch")

import scellis as sc  # noqa: E402
from scellis.base.errors import ScellisError  # noqa: E402
from scellis.codecs import find, make, read  # noqa: E402
from scellis.codecs.weights import load_into, state_of  # noqa: E402
from scellis.model import RecordModel  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _bytes(t) -> bytes:
    t = t.contiguous()
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()


def _mixed(seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {
        "f32": torch.randn(3, 4, generator=g),
        "f16": torch.randn(5, generator=g).half(),
        "bf16": torch.randn(2, 3, generator=g).bfloat16(),
        "f64": torch.randn(2, generator=g, dtype=torch.float64),
        "i64": torch.randint(-(2**40), 2**40, (3,), generator=g),
        "i32": torch.randint(-9, 9, (2, 2), generator=g, dtype=torch.int32),
        "u8": torch.randint(0, 255, (4,), generator=g, dtype=torch.uint8),
        "flags": torch.rand(6, generator=g) > 0.5,
    }


def test_reads_what_the_library_writes(tmp_path):
    tensors = _mixed(0)
    p = tmp_path / "w.safetensors"
    st.save_file(tensors, p, metadata={"note": "hi"})
    assert find(p) == "codec/safetensors"
    got = read(p)
    assert got.metadata == {"note": "hi"} and got.record is None
    assert set(got.tensors) == set(tensors)
    for k, t in tensors.items():
        assert got.tensors[k].shape == tuple(t.shape) and got.tensors[k].data == _bytes(t), k


def test_library_reads_what_the_codec_writes(tmp_path):
    src = tmp_path / "a.safetensors"
    st.save_file(_mixed(1), src)
    out = tmp_path / "b.safetensors"
    make("codec/safetensors").write(out, read(src).tensors, None)
    back, ref = st.load_file(out), st.load_file(src)
    assert set(back) == set(ref)
    for k in ref:
        assert back[k].dtype == ref[k].dtype and torch.equal(back[k], ref[k]), k
    assert out.read_bytes() == src.read_bytes()  # the same canonical layout


def _forecaster_record():
    return sc.sml.parse((EXAMPLES / "lstm_forecaster.sml").read_text()).data


class TorchForecaster(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(1, 32, batch_first=True)
        self.head = torch.nn.Linear(32, 1)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_torch_weights_onto_the_example_record(tmp_path, dtype):
    torch.manual_seed(4)
    tm = TorchForecaster().eval()
    sd = {f"model.{k}": v.to(dtype) for k, v in tm.state_dict().items()}  # a wrapped checkpoint
    p = tmp_path / "f.safetensors"
    st.save_file(sd, p)
    m = RecordModel(_forecaster_record(), device="reference").eval()
    assert load_into(m, read(p).tensors) == []
    # bf16/f16 weights were widened exactly: the model holds the torch values as f32
    for k, v in tm.state_dict().items():
        ours = np.asarray(dict(m.named_parameters())[k].tolist(), dtype=np.float32)
        np.testing.assert_array_equal(ours, v.to(dtype).float().numpy())
    x = torch.randn(4, 20, 1)
    with torch.no_grad():
        tm.load_state_dict({k: v.to(dtype).float() for k, v in tm.state_dict().items()})
        want = tm(x).numpy()
    got = np.asarray(m(sc.tensor(x.numpy(), device="reference")).tolist(), dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_explicit_name_map_and_mismatches(tmp_path):
    torch.manual_seed(5)
    seq = torch.nn.ModuleDict({"0": torch.nn.LSTM(1, 32), "1": torch.nn.Linear(32, 1)})
    p = tmp_path / "seq.safetensors"
    st.save_file({k: v.contiguous() for k, v in seq.state_dict().items()}, p)
    tensors = read(p).tensors
    m = RecordModel(_forecaster_record(), device="reference")
    with pytest.raises(ScellisError, match="nothing for 6 parameter"):
        load_into(m, tensors)
    load_into(m, tensors, {"0.": "lstm.", "1.": "head."})
    got = np.asarray(m.head.weight.tolist(), dtype=np.float32)
    np.testing.assert_array_equal(got, seq["1"].weight.detach().numpy())
    # a wrong shape names both sides
    bad = dict(tensors)
    bad["1.weight"] = read(p).tensors["0.weight_hh_l0"]
    with pytest.raises(ScellisError, match=r"'1.weight' has shape \[128, 32\].*'head.weight'"):
        load_into(m, bad, {"0.": "lstm.", "1.": "head."})
    # extra names are an error unless strict is off
    extra = {**tensors, "stray": tensors["1.bias"]}
    with pytest.raises(ScellisError, match="stray"):
        load_into(m, extra, {"0.": "lstm.", "1.": "head."})
    assert load_into(m, extra, {"0.": "lstm.", "1.": "head."}, strict=False) == ["stray"]


def test_export_round_trips_through_the_library(tmp_path):
    m = RecordModel(_forecaster_record(), device="reference")
    out = tmp_path / "model.safetensors"
    make("codec/safetensors").write(out, state_of(m), _forecaster_record())
    back = st.load_file(out)
    for k, p in m.named_parameters():
        np.testing.assert_array_equal(back[k].numpy(), np.asarray(p.tolist(), dtype=np.float32))
    again = read(out)
    assert again.record["blocks"] == _forecaster_record()["blocks"]
