"""Uploads kept behind a kernel the tab is still compiling stay within a bound.

In the tab a dispatch whose pipeline is compiling is kept, in order, with every write
after it, each write in a staging buffer of its own, until the next readback. A model's
load is one synchronous stretch of Python that meets new kernels (widening float16,
quantising), so before the bound its whole upload was held twice. The command lowers the
bound to a few tensors' worth, so the suite's small sizes take the path a 2 GiB folder
takes, and checks every value arrives, in order after the new kernel's work."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CALL = "(o) => window.scellisClient.call('bench_kept_uploads', o)"


@pytest.mark.parametrize("seed", [3, 11])
def test_kept_uploads_stay_within_the_bound_and_arrive_in_order(engine_page, seed):
    count, numel, kept_max = 24, 16384, 200_000  # 64 KiB tensors, 1.5 MiB in all
    out = engine_page.evaluate(
        CALL, {"count": count, "numel": numel, "kept_max": kept_max, "seed": seed}
    )
    assert out["equal"], "a value read back differs from the one uploaded"
    tensor = out["tensor_bytes"]
    assert tensor == 4 * numel
    # something was kept (the new kernel's dispatch held the writes), and never more
    # than the bound plus the write that crossed it
    assert tensor <= out["kept_bytes_peak"] <= kept_max + tensor, out
    assert out["kept_bytes_peak"] < (count - 1) * tensor, out
