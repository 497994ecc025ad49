"""State a pickle must not reach, memo-reference bombs, and archives zip readers disagree on.

``torch.load(weights_only=True)`` is the oracle for what a file may be: what it refuses is
refused here too (with a ScellisError, never another exception).
"""

from __future__ import annotations

import struct
import zipfile

import pytest
from ptfiles import archive, rebuild, state_dict_pickle, u

from scellis.base.errors import ScellisError
from scellis.codecs import read

torch = pytest.importorskip("torch")


def _write(tmp_path, data: bytes, name="f.pt"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _torch_refuses(path) -> None:
    with pytest.raises(Exception):  # noqa: B017 - torch's own refusals vary in type
        torch.load(path, weights_only=True)


def _refused(tmp_path, data: bytes, match: str, *, oracle=True, **kw):
    p = _write(tmp_path, data)
    if oracle:
        _torch_refuses(p)
    with pytest.raises(ScellisError, match=match):
        read(p, **kw)


G_REBUILD = b"ctorch._utils\n_rebuild_tensor_v2\n"
STORAGE = b"(" + u("storage") + b"ctorch\nFloatStorage\n" + u("0") + u("cpu") + b"K\x01tQ"


def test_build_on_a_rebuild_function_cannot_raise_the_size_cap(tmp_path):
    # BUILD on the allowed callable with partial-style state naming a huge byte budget,
    # then a one-element storage viewed as 6 GiB
    state = b"(" + G_REBUILD + b")}" + u("budget") + b"(\x8a\x06" + (1 << 44).to_bytes(6, "little")
    state += b"lsNt"
    size = b"(J" + struct.pack("<i", 1 << 15) + b"J" + struct.pack("<i", 3 << 15) + b"t"
    call = b"(" + STORAGE + b"K\x00" + size + b"(K\x00K\x00t\x89NtR"
    pkl = b"\x80\x02" + G_REBUILD + state + b"b" + call + b"."
    data = archive(b"\x80\x02}" + u("w") + pkl[2:-1] + b"s.", {"0": b"\x00" * 4})
    assert len(data) < 1024
    _refused(tmp_path, data, "sets state on a _Global")
    # without the BUILD the same view is counted at its materialised size: over the cap
    data = archive(b"\x80\x02}" + u("w") + G_REBUILD + call + b"s.", {"0": b"\x00" * 4})
    _refused(tmp_path, data, "more memory than the size cap", oracle=False)


def test_build_on_a_storage_type_cannot_change_later_loads(tmp_path):
    # set FloatStorage's dtype to F64 for the rest of the process, then load a plain file
    pkl = b"\x80\x02ctorch\nFloatStorage\nN}" + u("dtype") + u("F64") + b"s\x86b0}."
    _refused(tmp_path, archive(pkl), "sets state on a StorageType")
    good = state_dict_pickle([("w", rebuild("FloatStorage", "0", 2, 0, (2,), (1,)))])
    p = _write(tmp_path, archive(good, {"0": struct.pack("<2f", 1.5, -2.0)}), "good.pt")
    t = read(p).tensors["w"]
    assert (t.dtype, t.shape, t.values()) == ("F32", (2,), [1.5, -2.0])
    assert torch.load(p, weights_only=True)["w"].tolist() == [1.5, -2.0]


def test_build_on_a_tensor_record_is_refused(tmp_path):
    w = rebuild("FloatStorage", "0", 2, 0, (2,), (1,))
    for state in (b"}" + u("shape") + b"(K\x05t" + b"s", b"N}" + u("size") + b"(K\x05ts\x86"):
        pkl = b"\x80\x02}" + u("w") + w + state + b"bs."
        _refused(tmp_path, archive(pkl, {"0": b"\x00" * 8}), "sets state on a View")
    # nor on the values a pickle builds itself
    pkl = b"\x80\x02}" + u("w") + b"]" + b"}" + u("x") + b"K\x01sbs."
    _refused(tmp_path, archive(pkl), "sets state on a list")


def test_extension_codes_are_refused(tmp_path):
    _refused(tmp_path, archive(b"\x80\x02\x82\x01."), "extension code")


def test_a_state_dicts_own_build_is_read(tmp_path):
    # module.state_dict() hangs _metadata on its OrderedDict: torch.save writes a BUILD
    p = tmp_path / "lin.pt"
    torch.save(torch.nn.Linear(3, 2).state_dict(), p)
    assert b"_metadata" in p.read_bytes()
    got = read(p)
    assert sorted(got.tensors) == ["bias", "weight"] and got.metadata == {}


def test_memo_reference_bombs_are_refused_before_allocating(tmp_path):
    import time

    w = rebuild("FloatStorage", "0", 1, 0, (1,), (1,))
    # 2**40 names from a file of about a kilobyte; and the same with list leaves
    for leaf in (w, b"](K\x01K\x02e"):
        pkl = b"\x80\x02" + leaf + b"q\x00"
        for i in range(40):
            pkl += b"}(" + u("a") + b"h" + bytes([i]) + u("b") + b"h" + bytes([i]) + b"u"
            pkl += b"q" + bytes([i + 1])
        pkl += b"."
        data = archive(pkl, {"0": b"\x00" * 4})
        assert len(data) < 2048
        p = _write(tmp_path, data)
        t0 = time.monotonic()
        with pytest.raises(ScellisError, match="more than|expands past"):
            read(p)
        assert time.monotonic() - t0 < 10
    # torch keeps the references shared; the names it would flatten to are what count here
    assert isinstance(torch.load(p, weights_only=True), dict)


def test_stride_zero_views_count_each_reference_at_full_size(tmp_path):
    # one 2**28-element expanded view (1 GiB as f32) named three times: 3 GiB
    v = rebuild("FloatStorage", "0", 1, 0, (1 << 14, 1 << 14), (0, 0))
    pkl = b"\x80\x02}(" + u("a") + v + b"q\x00" + u("b") + b"h\x00" + u("c") + b"h\x00u."
    p = _write(tmp_path, archive(pkl, {"0": b"\x00" * 4}))
    with pytest.raises(ScellisError, match="more memory than the size cap"):
        read(p, max_bytes=2 << 30)


def _torch_file(tmp_path) -> bytes:
    p = tmp_path / "real.pt"
    torch.save({"w": torch.arange(6.0).reshape(2, 3)}, p)
    return p.read_bytes()


def test_a_junk_prefix_is_refused_like_torch(tmp_path):
    good = _torch_file(tmp_path)
    _refused(tmp_path, b"\x00" * 16 + good, "not a zip archive")
    _refused(tmp_path, b"PK\x03\x04" + b"\x00" * 60 + good, "does not start where|readable")


def test_two_archives_joined_are_refused(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "a.pt")
    torch.save({"v": torch.zeros(3)}, tmp_path / "b.pt")
    joined = (tmp_path / "a.pt").read_bytes() + (tmp_path / "b.pt").read_bytes()
    p = _write(tmp_path, joined)
    # torch reads the first archive, zipfile the second: no single right answer, refused
    assert list(torch.load(p, weights_only=True)) == ["w"]
    assert zipfile.ZipFile(p).namelist()[0] == "b/data.pkl"
    with pytest.raises(ScellisError, match="does not start where|belong to no member"):
        read(p)


def test_bytes_hidden_between_members_or_after_the_end(tmp_path):
    good = archive(state_dict_pickle([]))
    i = good.index(b"PK\x01\x02")
    _refused(tmp_path, good + b"trailing", "follow the archive|readable", oracle=False)
    hidden = good[:i] + b"hidden" + good[i:]
    p = _write(tmp_path, hidden)
    with pytest.raises(ScellisError):
        read(p)


def test_an_encrypted_member_is_refused(tmp_path):
    good = _torch_file(tmp_path)
    name = b"real/data.pkl"
    data = bytearray(good)
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = data.rindex(sig, 0, data.index(name, data.index(sig)))
        flags = struct.unpack_from("<H", data, i + at)[0]
        struct.pack_into("<H", data, i + at, flags | 1)
    _refused(tmp_path, bytes(data), "is encrypted")


def test_names_from_the_file_stay_on_one_line(tmp_path):
    # STACK_GLOBAL takes its module and name from strings, which may hold newlines
    pkl = b"\x80\x04" + u("os\nimport evil") + u("system\r\n") + b"\x93."
    p = _write(tmp_path, archive(pkl))
    with pytest.raises(ScellisError) as e:
        read(p)
    assert "\n" not in str(e.value) and "'os\\nimport evil'" in str(e.value)


def test_a_deflated_member_may_not_inflate_like_a_bomb(tmp_path):
    # torch reads deflated members too; one that inflates 1000:1 is refused under any cap
    with zipfile.ZipFile(tmp_path / "bomb.pt", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("archive/data.pkl", state_dict_pickle([]))
        zf.writestr("archive/version", "3\n")
        zf.writestr("archive/data/0", b"\x00" * (8 << 20))
    assert (tmp_path / "bomb.pt").stat().st_size < 64 << 10
    with pytest.raises(ScellisError, match="over 200:1: a zip bomb"):
        read(tmp_path / "bomb.pt")
    # a re-zipped checkpoint of ordinary numbers reads
    torch.save({"w": torch.randn(300, 300)}, tmp_path / "plain.pt")
    src = zipfile.ZipFile(tmp_path / "plain.pt")
    with zipfile.ZipFile(tmp_path / "re.pt", "w", zipfile.ZIP_DEFLATED) as zf:
        for info in src.infolist():
            zf.writestr(info.filename, src.read(info.filename))
    assert read(tmp_path / "re.pt").tensors["w"].shape == (300, 300)
