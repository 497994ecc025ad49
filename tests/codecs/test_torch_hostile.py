"""Hostile PyTorch archives: refused with a reason naming the problem; no code ever runs."""

from __future__ import annotations

import os
import pickle
import struct
import warnings
import zipfile

import pytest
from ptfiles import archive, rebuild, state_dict_pickle, u

from scellis.base.errors import ScellisError
from scellis.codecs import read


@pytest.fixture
def canary(tmp_path):
    path = tmp_path / "canary"
    yield path
    assert not path.exists(), "code from the file ran"


def _refused(tmp_path, data: bytes, match: str, name="evil.pt", **kw):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(ScellisError, match=match):
        read(p, **kw)


class _Boom:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def test_os_system_through_reduce(tmp_path, canary):
    pkl = pickle.dumps({"w": _Boom(os.system, f"touch {canary}")}, protocol=2)
    _refused(tmp_path, archive(pkl), r"refused global (posix|os|nt)\.system")


def test_builtins_eval_and_exec(tmp_path, canary):
    code = f"open({str(canary)!r}, 'w').close()"
    for fn in (eval, exec):
        pkl = pickle.dumps(_Boom(fn, code), protocol=2)
        _refused(tmp_path, archive(pkl), rf"refused global (__builtin__|builtins)\.{fn.__name__}")
        pkl = pickle.dumps(_Boom(fn, code), protocol=4)
        _refused(tmp_path, archive(pkl), rf"refused global builtins\.{fn.__name__}")


def test_stack_global_tricks(tmp_path, canary):
    cmd = f"touch {canary}"
    # protocol 4: module and name pushed as strings, STACK_GLOBAL resolves them
    plain = b"\x80\x04" + u("os") + u("system") + b"\x93" + u(cmd) + b"\x85R."
    _refused(tmp_path, archive(plain), r"refused global os\.system")
    # the module name memoised first and fetched back, to hide it from a naive scan
    memo = b"\x80\x04" + u("subprocess") + b"\x94" + b"0" + b"h\x00" + u("getoutput") + b"\x93"
    memo += u(cmd) + b"\x85R."
    _refused(tmp_path, archive(memo), r"refused global subprocess\.getoutput")
    # a dotted name walking from an allowed module to a dangerous attribute
    dotted = b"\x80\x04" + u("torch._utils") + u("_rebuild_tensor_v2.__globals__") + b"\x93."
    _refused(tmp_path, archive(dotted), r"refused global torch\._utils\._rebuild_tensor_v2")
    # INST and OBJ name classes too
    inst = b"\x80\x02(" + u(cmd) + b"ios\nsystem\n."
    _refused(tmp_path, archive(inst), r"refused global os\.system")


def test_torch_functions_outside_the_allowlist(tmp_path, canary):
    for mod, name in [("torch", "load"), ("torch.serialization", "load"), ("builtins", "getattr")]:
        pkl = b"\x80\x02c" + f"{mod}\n{name}\n".encode() + u(str(canary)) + b"\x85R."
        _refused(tmp_path, archive(pkl), rf"refused global {mod}\.{name}")


def test_whole_module_pickles_name_the_class(tmp_path):
    torch = pytest.importorskip("torch")
    p = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(2, 3), p)
    with pytest.raises(ScellisError, match=r"refused global torch\.nn\.modules\.linear\.Linear"):
        read(p)


def test_reduce_on_allowed_names_with_odd_args(tmp_path):
    # a storage marker is not callable
    pkl = b"\x80\x02ctorch\nFloatStorage\n(K\x03tR."
    _refused(tmp_path, archive(pkl), "bad pickle data")
    # the rebuild function fed a string where the storage goes
    pkl = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" + u("x") + b"K\x00(t(t\x89NtR."
    _refused(tmp_path, archive(pkl), "not a storage")
    # OrderedDict with a keyword-ish mapping argument it was never given by torch
    pkl = b"\x80\x02ccollections\nOrderedDict\n(K\x01K\x02tR."
    _refused(tmp_path, archive(pkl), "unexpected arguments")
    # NEWOBJ on a rebuild function (not a class)
    pkl = b"\x80\x02ctorch._utils\n_rebuild_parameter\n)\x81."
    _refused(tmp_path, archive(pkl), "bad pickle data")
    # BUILD on a storage tries to set attributes
    st = b"(" + u("storage") + b"ctorch\nFloatStorage\n" + u("0") + u("cpu") + b"K\x01tQ"
    pkl = b"\x80\x02" + st + b"}" + u("data") + u("x") + b"sb."
    _refused(tmp_path, archive(pkl, {"0": b"\x00" * 4}), "sets state on a Storage")


def _one_tensor(numel, offset, size, stride, nbytes):
    pkl = state_dict_pickle([("w", rebuild("FloatStorage", "0", numel, offset, size, stride))])
    return archive(pkl, {"0": bytes(range(nbytes % 256)) * (nbytes // 256) + bytes(nbytes % 256)})


def test_views_past_the_storage(tmp_path):
    good = _one_tensor(6, 0, (2, 3), (3, 1), 24)
    p = tmp_path / "ok.pt"
    p.write_bytes(good)
    assert read(p).tensors["w"].shape == (2, 3)
    _refused(tmp_path, _one_tensor(6, 1, (2, 3), (3, 1), 24), "reaches element 6")
    _refused(tmp_path, _one_tensor(6, 0, (2, 3), (4, 1), 24), "reaches element 6")
    _refused(tmp_path, _one_tensor(6, -1, (2,), (1,), 24), "reaches element")
    _refused(tmp_path, _one_tensor(6, 0, (2, 3), (-1, 1), 24), "bad size")
    # the storage claims more elements than its member holds
    _refused(tmp_path, _one_tensor(8, 0, (2, 3), (3, 1), 24), "claims 8 F32 elements")
    # a storage key that tries to leave data/
    pkl = state_dict_pickle([("w", rebuild("FloatStorage", "../data.pkl", 1, 0, (1,), (1,)))])
    _refused(tmp_path, archive(pkl), "not a plain name")


def test_zip_member_names(tmp_path):
    pkl = state_dict_pickle([])
    _refused(tmp_path, archive(pkl, extra=[("archive/../../escape", b"x")]), r"'\.\.' component")
    _refused(tmp_path, archive(pkl, extra=[("/etc/owned", b"x")]), "absolute path")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate it writes
        dup = archive(pkl, extra=[("archive/data.pkl", pkl)])
    _refused(tmp_path, dup, "appears twice")


def _patch_central(data: bytes, name: bytes, offset: int, value: int) -> bytes:
    """Overwrite a 4-byte field of ``name``'s central directory entry."""
    i = data.rindex(b"PK\x01\x02", 0, data.rindex(name))
    return data[: i + offset] + struct.pack("<I", value) + data[i + offset + 4 :]


def test_zip_sizes_and_crcs_that_lie(tmp_path):
    good = _one_tensor(6, 0, (2, 3), (3, 1), 24)
    # flip one payload byte: the CRC no longer matches
    i = good.index(b"archive/data/0") + len("archive/data/0")
    bad = good[:i] + bytes([good[i] ^ 0xFF]) + good[i + 1 :]
    _refused(tmp_path, bad, "CRC|damaged")
    # the directory claims another CRC
    _refused(tmp_path, _patch_central(good, b"archive/data/0", 16, 0x12345678), "CRC|damaged")
    # the directory claims a larger and a smaller inflated size
    for size in (4096, 8):
        lie = _patch_central(good, b"archive/data/0", 24, size)
        _refused(tmp_path, lie, "CRC|bytes|damaged|past|no member")
    # the data claims to run past the end of the file
    far = _patch_central(good, b"archive/data/0", 20, 1 << 30)
    _refused(tmp_path, far, "past|damaged|no member")


def test_size_cap_and_legacy_and_garbage(tmp_path):
    torch = pytest.importorskip("torch")
    good = _one_tensor(6, 0, (2, 3), (3, 1), 24)
    _refused(tmp_path, good, "cap", max_bytes=256)
    p = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, p, _use_new_zipfile_serialization=False)
    with pytest.raises(ScellisError, match="legacy"):
        read(p)
    _refused(tmp_path, b"PK\x03\x04 not really a zip", "not a readable zip")
    _refused(tmp_path, archive(b"\x80\x02}q\x00(X\x01"), "bad pickle data")
    no_pkl = archive(b"").replace(b"archive/data.pkl", b"archive/other.pk")
    _refused(tmp_path, no_pkl, "one <name>/data.pkl")
    with zipfile.ZipFile(tmp_path / "bomb.pt", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("archive/data.pkl", state_dict_pickle([]))
        zf.writestr("archive/data/0", b"\x00" * (1 << 20))
    with pytest.raises(ScellisError, match="inflate past"):
        read(tmp_path / "bomb.pt", max_bytes=1 << 16)


def test_memory_and_nesting_bombs(tmp_path):
    # a one-element storage viewed with stride 0 as 2**32 elements (16 GiB, over the 4 GiB cap)
    bomb = state_dict_pickle(
        [("w", rebuild("FloatStorage", "0", 1, 0, (1 << 16, 1 << 16), (0, 0)))]
    )
    _refused(tmp_path, archive(bomb, {"0": b"\x00" * 4}), "more memory than the size cap")
    dims = (1,) * 100
    many = state_dict_pickle([("w", rebuild("FloatStorage", "0", 1, 0, dims, dims))])
    _refused(tmp_path, archive(many, {"0": b"\x00" * 4}), "100 dimensions")
    deep = b"\x80\x02" + b"}(" * 0 + (b"}" + u("k")) * 200 + b"N" + b"s" * 200 + b"."
    _refused(tmp_path, archive(deep), "nests deeper")
