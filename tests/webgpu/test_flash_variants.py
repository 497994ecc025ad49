"""The flash attention rows of the case table under every kernel variant on WebGPU.

``test_case_table`` runs the rows with the default variant; here each other variant
runs them too (f32 against the f64 reference, f16 against the reference's f16
emulation, with the table's bounds), and the tiled kernels run once more under the
WebGPU spec's default limits (16 KiB of workgroup storage, 256 invocations), where
their tiles are the smallest. A tiled variant that would fall back to the row kernels
for a row's head size fails instead, so every row reaches the kernels it names.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))

import test_case_table as table  # noqa: E402
from cases import ALL_CASES  # noqa: E402
from cases_f16 import F16_CASES  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.base.errors import DeviceError  # noqa: E402
from scellis.devices.webgpu.kernels import attention, attention_tiles  # noqa: E402
from scellis.devices.webgpu.kernels.common import Source  # noqa: E402
from scellis.ops.attention import flash_attention  # noqa: E402

pytestmark = pytest.mark.webgpu

FLASH_ROWS = [c for c in ALL_CASES if c.name.startswith("flash_attention")]
FLASH_F16_ROWS = [c for c in F16_CASES if c.name.startswith("flash_attention")]
OTHER_VARIANTS = [v for v in attention.VARIANTS if v != attention.VARIANT]
SPEC_LIMITS = {
    "max_compute_workgroup_storage_size": 16384,
    "max_compute_invocations_per_workgroup": 256,
}


def _use(monkeypatch, gpu, case, variant: str) -> None:
    monkeypatch.setattr(attention, "VARIANT", variant)
    cap = attention.VARIANTS[variant]
    if cap is not None:
        d = case.arrays()[0].shape[-1]
        assert attention_tiles.fits(Source(gpu.limits), d, cap), f"{variant}: falls back"


@pytest.mark.parametrize("variant", OTHER_VARIANTS)
@pytest.mark.parametrize("case", FLASH_ROWS, ids=lambda c: c.name)
def test_flash_row_under_variant(gpu, monkeypatch, variant, case):
    _use(monkeypatch, gpu, case, variant)
    table.test_row_on_webgpu(gpu, table.excluded(gpu), case)


@pytest.mark.parametrize("variant", OTHER_VARIANTS)
@pytest.mark.parametrize("case", FLASH_F16_ROWS, ids=lambda c: c.name)
def test_flash_f16_row_under_variant(gpu, monkeypatch, variant, case):
    _use(monkeypatch, gpu, case, variant)
    table.test_f16_row_on_webgpu(gpu, case)


@pytest.mark.parametrize("case", FLASH_ROWS, ids=lambda c: c.name)
def test_tiled_rows_under_spec_default_limits(gpu, monkeypatch, case):
    for key, value in SPEC_LIMITS.items():
        monkeypatch.setitem(gpu.limits, key, min(value, gpu.limits[key]))
    _use(monkeypatch, gpu, case, "tile")
    table.test_row_on_webgpu(gpu, table.excluded(gpu), case)


def test_unknown_variant_is_refused(gpu, monkeypatch):
    monkeypatch.setattr(attention, "VARIANT", "fastest")
    q = sc.tensor(np.ones((1, 1, 2, 4), np.float32), device=gpu)
    with pytest.raises(DeviceError, match="unknown flash attention variant 'fastest'"):
        flash_attention(q, q, q).tolist()


@pytest.mark.parametrize("case", FLASH_ROWS[:3], ids=lambda c: c.name)
def test_backward_without_a_binding_for_the_stored_delta(gpu, monkeypatch, case):
    # with one storage binding fewer than the dq pass needs to hand each row's delta to
    # the dk/dv pass, that pass sums dO . O itself again (same maths, its own code path)
    monkeypatch.setitem(gpu.limits, "max_storage_buffers_per_shader_stage", 7)
    _use(monkeypatch, gpu, case, "tile")
    table.test_row_on_webgpu(gpu, table.excluded(gpu), case)
