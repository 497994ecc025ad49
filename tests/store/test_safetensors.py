"""Pure-Python safetensors against the ``safetensors`` package, both ways, byte for byte."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import load as np_load
from safetensors.numpy import save as np_save
from safetensors.torch import load as torch_load
from safetensors.torch import save as torch_save

import scellis
from scellis.store.safetensors import MAX_HEADER, SafetensorsError, dumps, loads

NP = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "U16": np.uint16,
    "U32": np.uint32,
    "U64": np.uint64,
    "BOOL": np.bool_,
}


def _random_array(rng, code, shape):
    if code == "BOOL":
        return rng.random(shape) < 0.5
    dt = np.dtype(NP[code])
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 3).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6
).filter(lambda s: s != "__metadata__")
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
entries = st.dictionaries(names, st.tuples(st.sampled_from(sorted(NP)), shapes), max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries, st.integers(0, 2**32 - 1), st.booleans())
def test_numpy_library_and_ours_write_identical_bytes(spec, seed, with_meta):
    rng = np.random.default_rng(seed)
    arrays = {k: np.asarray(_random_array(rng, code, shape)) for k, (code, shape) in spec.items()}
    meta = {"format": "pt"} if with_meta else None
    theirs = np_save(arrays, metadata=meta)
    ours = dumps({k: (spec[k][0], a.shape, a.tobytes()) for k, a in arrays.items()}, metadata=meta)
    assert ours == theirs
    # their bytes through our reader
    tensors, got_meta = loads(theirs)
    assert got_meta == (meta or {})
    assert set(tensors) == set(arrays)
    for k, (code, shape, view) in tensors.items():
        assert code == spec[k][0] and shape == arrays[k].shape
        assert bytes(view) == arrays[k].tobytes()
    # our bytes through their reader
    back = np_load(ours)
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype and np.array_equal(back[k], a)


def test_torch_bf16_and_ordering_match_the_library():
    g = torch.Generator().manual_seed(7)
    ts = {
        "w.bf": torch.randn(3, 5, generator=g).to(torch.bfloat16),
        "b.h": torch.randn(4, generator=g).to(torch.float16),
        "a": torch.randn(2, 2, generator=g, dtype=torch.float64),
        "z": torch.randint(-9, 9, (3,), generator=g, dtype=torch.int64),
        "m": torch.randn(7, generator=g),
    }
    codes = {
        torch.bfloat16: "BF16",
        torch.float16: "F16",
        torch.float64: "F64",
        torch.int64: "I64",
        torch.float32: "F32",
    }
    mine = {
        k: (codes[t.dtype], tuple(t.shape), t.contiguous().view(torch.uint8).numpy().tobytes())
        for k, t in ts.items()
    }
    theirs = torch_save(ts, metadata={"step": "12"})
    assert dumps(mine, {"step": "12"}) == theirs
    back = torch_load(dumps(mine))
    for k, t in ts.items():
        assert back[k].dtype == t.dtype and torch.equal(back[k], t)
    order = list(loads(theirs)[0])
    assert order == ["z", "a", "m", "w.bf", "b.h"]  # 8-byte, 4-byte, 2-byte (BF16 > F16)


def test_many_metadata_keys_are_sorted_and_the_library_reads_them():
    meta = {"z": "1", "a": "2", "é": 'ü\n"', "m": ""}
    data = dumps({"x": ("F32", (2,), struct.pack("<2f", 1.5, -2.0))}, meta)
    n = struct.unpack("<Q", data[:8])[0]
    head = json.loads(data[8 : 8 + n])
    assert list(head["__metadata__"]) == sorted(meta)
    assert (
        dumps({"x": ("F32", (2,), struct.pack("<2f", 1.5, -2.0))}, dict(reversed(meta.items())))
        == data
    )
    from safetensors import safe_open

    path = Path(__import__("tempfile").mkdtemp()) / "m.safetensors"
    path.write_bytes(data)
    with safe_open(str(path), "np") as f:
        assert f.metadata() == meta
        assert f.get_tensor("x").tolist() == [1.5, -2.0]


def _raw(header: bytes | str, body: bytes = b"", n: int | None = None) -> bytes:
    if isinstance(header, str):
        header = header.encode()
    return struct.pack("<Q", len(header) if n is None else n) + header + body


BAD = {
    "duplicate name": (
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
        '"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}',
        b"xy",
        "duplicate key 'a'",
    ),
    "not an object": ("[1, 2]", b"", "not a JSON object"),
    "bad json": ('{"a":', b"", "not valid JSON"),
    "nan": ('{"__metadata__":{"a":NaN}}', b"", "NaN"),
    "past the end": ('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', b"1234", "past"),
    "gap": (
        '{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}',
        b"xy",
        "leaves a gap",
    ),
    "overlap": (
        '{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
        '"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}',
        b"xyz",
        "overlaps",
    ),
    "trailing bytes": ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"xy", "belong"),
    "size mismatch": (
        '{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}',
        b"12345678",
        "needs 12",
    ),
    "unknown dtype": ('{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}', b"", "F128"),
    "negative dim": ('{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}', b"", "shape"),
    "meta not str": ('{"__metadata__":{"a":1}}', b"", "strings to strings"),
    "missing field": ('{"a":{"dtype":"U8","shape":[1]}}', b"x", "exactly dtype"),
    "not utf-8": (b'{"\xff":1}', b"", "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_forbidden_inputs_are_refused_with_a_reason(case):
    header, body, reason = BAD[case]
    with pytest.raises(SafetensorsError, match=reason):
        loads(_raw(header, body))


def test_the_library_accepts_a_duplicate_that_we_refuse():
    # two identical entries under one name: the reference reader keeps one, the format
    # forbids it, and so do we
    entry = '{"dtype":"U8","shape":[1],"data_offsets":[0,1]}'
    raw = _raw('{"a":' + entry + ',"a":' + entry + "}", b"x")
    assert np_load(raw)["a"].tolist() == [120]
    with pytest.raises(SafetensorsError, match="duplicate key 'a'"):
        loads(raw)


def test_huge_header_length_is_refused_before_reading():
    # claims a 2^40-byte header but is 16 bytes long: refused on the number alone
    with pytest.raises(SafetensorsError, match="over the limit"):
        loads(struct.pack("<Q", 2**40) + b"{}      ")
    with pytest.raises(SafetensorsError, match="over the limit"):
        loads(struct.pack("<Q", MAX_HEADER + 1) + b"{}")
    with pytest.raises(SafetensorsError, match="runs past"):
        loads(struct.pack("<Q", 64) + b"{}")
    with pytest.raises(SafetensorsError, match="too short"):
        loads(b"\x01\x00")


def test_writer_refuses_bad_tensor_sets():
    with pytest.raises(SafetensorsError, match="needs 8"):
        dumps({"a": ("F32", (2,), b"1234")})
    with pytest.raises(SafetensorsError, match="reserved"):
        dumps({"__metadata__": ("U8", (1,), b"x")})
    with pytest.raises(SafetensorsError, match="unknown dtype"):
        dumps({"a": ("F8", (1,), b"x")})
    with pytest.raises(SafetensorsError, match="str to str"):
        dumps({}, {"a": 1})


def test_empty_metadata_is_written_as_none():
    assert dumps({}, {}) == dumps({}) == np_save({})
    assert loads(dumps({})) == ({}, {})


def test_module_imports_without_numpy():
    src = str(Path(scellis.__file__).resolve().parent.parent)
    code = (
        "import sys\n"
        "for m in ('numpy', 'torch', 'safetensors'): sys.modules[m] = None\n"
        "from scellis.store.safetensors import dumps, loads\n"
        "t, m = loads(dumps({'a': ('U8', (2,), b'hi')}, {'k': 'v'}))\n"
        "print(bytes(t['a'][2]).decode(), m['k'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src}
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["hi", "v"]


def test_hostile_json_headers_are_refused_like_the_package():
    from safetensors import SafetensorError
    from safetensors.torch import load as st_load

    deep = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    big = b'{"a":{"dtype":"U8","shape":[' + b"9" * 5000 + b'],"data_offsets":[0,1]}}'
    neg_big = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,-' + b"1" * 30 + b"]}}"
    for header, match in ((deep, "nests"), (big, "5000-digit"), (neg_big, "digit")):
        with pytest.raises(SafetensorError):
            st_load(_raw(header, b"\x00"))
        with pytest.raises(SafetensorsError, match=match):
            loads(_raw(header, b"\x00"))
