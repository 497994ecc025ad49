"""PyTorch state dicts read without torch: values match torch.load bit for bit."""

from __future__ import annotations

import collections

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from scellis.codecs import make, read  # noqa: E402
from scellis.codecs.raw import widen  # noqa: E402


def _bytes(t) -> bytes:
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def _state(seed: int) -> collections.OrderedDict:
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(5, 7, generator=g)
    shared = torch.randn(12, generator=g)
    return collections.OrderedDict(
        weight=torch.randn(3, 4, generator=g),
        transposed=base.t(),  # non-contiguous
        window=base[1:4, 2:6],  # offset + strides
        every_other=shared[1::3],  # stride 3 inside a shared storage
        same_storage=shared.view(3, 4),
        half=torch.randn(6, generator=g).half(),
        bf16=torch.randn(2, 3, generator=g).bfloat16(),
        f64=torch.randn(4, generator=g, dtype=torch.float64),
        ids=torch.randint(-(2**40), 2**40, (5,), generator=g),
        small_ids=torch.randint(-100, 100, (2, 2), generator=g, dtype=torch.int32),
        flags=torch.rand(7, generator=g) > 0.5,
        scalar=torch.tensor(2.75),
        empty=torch.zeros(0, 3),
        param=torch.nn.Parameter(torch.randn(2, generator=g)),
        expanded=torch.randn(3, 1, generator=g).expand(3, 4),  # stride 0
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_values_match_torch_load_bitwise(tmp_path, seed):
    sd = _state(seed)
    p = tmp_path / "model.pt"
    torch.save({"model": sd, "epoch": 7, "name": "run"}, p)
    ref = torch.load(p, weights_only=True)
    got = read(p)
    assert got.codec == "codec/torch"
    assert got.metadata == {"epoch": 7, "name": "run"}
    assert list(got.tensors) == [f"model.{k}" for k in sd]
    for k, t in ref["model"].items():
        raw = got.tensors[f"model.{k}"]
        assert raw.shape == tuple(t.shape), k
        assert raw.data == _bytes(t), k


def test_nn_module_state_dict_keys_and_values(tmp_path):
    torch.manual_seed(3)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LSTM(4, 5, 2), torch.nn.BatchNorm1d(5))
    p = tmp_path / "m.pth"
    torch.save(m.state_dict(), p)
    got = read(p).tensors
    assert list(got) == list(m.state_dict())
    assert got["2.num_batches_tracked"].dtype == "I64"
    for k, t in m.state_dict().items():
        assert got[k].data == _bytes(t)


def test_widening_bf16_and_int64(tmp_path):
    g = torch.Generator().manual_seed(5)
    bf = torch.randn(9, generator=g).bfloat16()
    ids = torch.randint(-1000, 1000, (4,), generator=g)
    p = tmp_path / "w.pt"
    torch.save({"bf": bf, "ids": ids}, p)
    got = read(p).tensors
    dt, data = widen(got["bf"])
    assert dt == "f32"
    assert np.frombuffer(data, "<f4").tobytes() == bf.float().numpy().tobytes()
    dt, data = widen(got["ids"])
    assert dt == "i32" and np.frombuffer(data, "<i4").tolist() == ids.tolist()


def test_written_archive_loads_in_torch_weights_only(tmp_path):
    sd = _state(2)
    p = tmp_path / "in.pt"
    torch.save(sd, p)
    tensors = read(p).tensors
    out = tmp_path / "out.pt"
    make("codec/torch").write(out, tensors, None)
    back = torch.load(out, weights_only=True)
    assert list(back) == list(sd)
    for k, t in sd.items():
        assert back[k].dtype == t.dtype and torch.equal(back[k], t.detach()), k
    assert read(out).tensors == tensors
