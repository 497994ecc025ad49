"""Fixtures for the attention tests: the real WebGPU adapter (lavapipe here), never a mock."""

import os
import tempfile

import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.base.errors import DeviceError  # noqa: E402
from scellis.devices import get_device  # noqa: E402


@pytest.fixture(scope="session")
def gpu():
    try:
        return get_device("webgpu")
    except DeviceError as e:
        pytest.skip(f"no WebGPU adapter: {e}")
