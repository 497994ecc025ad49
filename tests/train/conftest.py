"""Fixtures for the training-loop tests: devices, a tiny regression task, read counting."""

import os
import tempfile

import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

DEVICES = ["reference", pytest.param("webgpu", marks=pytest.mark.webgpu)]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
