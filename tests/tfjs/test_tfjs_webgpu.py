"""An imported TF.js model on WebGPU (lavapipe in CI): a GRU stack with Keras' hard-sigmoid
gates and reset-before candidate, step by step, equals TF.js' predictions."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from test_tfjs_import import ours
from tfjsmodels import io_of

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.codecs.convert import import_file  # noqa: E402

pytestmark = pytest.mark.webgpu


def test_imported_gru_on_webgpu(tmp_path, tfjs_models, gpu):
    res = import_file(tfjs_models / "gru" / "model.json", store=tmp_path / "s")
    x, want, ids = io_of(tfjs_models / "gru")
    np.testing.assert_allclose(ours(res.record, res.tensors, x, ids, gpu), want,
                               rtol=1e-5, atol=2e-6)  # fmt: skip
