"""Fixtures for the attention tests: the real WebGPU adapter (lavapipe here), never a mock."""

import os
import tempfile

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
