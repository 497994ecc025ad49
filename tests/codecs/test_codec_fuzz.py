"""Damaged files: every reader fails with a ScellisError (one clear line), never a crash."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from onnx_models import Forecaster, export  # noqa: E402

from scellis.base.errors import ScellisError  # noqa: E402
from scellis.codecs import make  # noqa: E402

_FILES: dict[str, bytes] = {}


def _originals(tmp_path_factory) -> dict[str, bytes]:
    if not _FILES:
        d = tmp_path_factory.mktemp("fuzz")
        torch.manual_seed(0)
        m = Forecaster(torch.nn.GRU, layers=1, hidden=3).eval()
        export(m, torch.randn(2, 3, 2), d / "m.onnx")
        torch.save({"sd": m.state_dict(), "w": torch.randn(4, 3).t()}, d / "m.pt")
        from safetensors.torch import save_file

        save_file(m.state_dict(), d / "m.safetensors")
        for name in ("m.onnx", "m.pt", "m.safetensors"):
            _FILES[name] = (d / name).read_bytes()
    return _FILES


CODECS = {"m.onnx": "codec/onnx", "m.pt": "codec/torch", "m.safetensors": "codec/safetensors"}


@pytest.mark.parametrize("name", list(CODECS))
def test_mutated_files_fail_cleanly(tmp_path_factory, name):
    data = _originals(tmp_path_factory)[name]
    codec = make(CODECS[name])
    folder = tmp_path_factory.mktemp("cases")

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        edits=st.lists(
            st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), min_size=1, max_size=4
        ),
        cut=st.one_of(st.none(), st.integers(0, len(data))),
    )
    def check(edits, cut):
        b = bytearray(data)
        for pos, val in edits:
            b[pos] = val
        if cut is not None:
            b = b[:cut]
        p = folder / name
        p.write_bytes(bytes(b))
        try:
            codec.read(p)
        except ScellisError as e:
            assert str(e) and "\n" not in str(e).strip()

    check()
