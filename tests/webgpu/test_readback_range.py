"""Reading a view back copies only the bytes it covers, in whole 4-byte words.

Values are checked against NumPy's slicing of the same random array; the bytes against
what the GPU adapter is asked to copy (a spy on ``read_buffer``) and the device's own
``read_bytes`` count.
"""

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend

pytestmark = pytest.mark.webgpu

# view name -> the index applied to both the tensor and the NumPy array
VIEWS = {
    "first element": np.s_[:1, :1],
    "first row": np.s_[0],
    "last row": np.s_[-1],
    "rows 2-3": np.s_[2:4],
    "odd start in a row": np.s_[3, 5:10],
    "one element at an odd place": np.s_[4, 7:8],
    "last column": np.s_[:, -1],
    "strided block": np.s_[1:6:2, 3:12:3],
}
SHAPE = (7, 13)


class CopySpy:
    """Records every (offset, size) the backend asks its GPU adapter to copy back."""

    def __init__(self, monkeypatch, dev):
        self.copies = []
        real = dev.gpu.read_buffer

        async def read_buffer(buf, offset, size):
            self.copies.append((offset, size))
            return await real(buf, offset, size)

        monkeypatch.setattr(dev.gpu, "read_buffer", read_buffer)

    def take(self):
        out, self.copies = self.copies, []
        return out


def random_array(rng, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(SHAPE) < 0.5
    if dtype == "i32":
        return rng.integers(-1000, 1000, SHAPE).astype(np.int32)
    return rng.standard_normal(SHAPE).astype(np.float16 if dtype == "f16" else np.float32)


def expected_copy(view, storage_item: int) -> int:
    """Bytes one readback of ``view`` moves: the words covering its range in the buffer,
    or, for a view that is not contiguous, its elements copied to a buffer of their own."""
    lo = view.offset * storage_item if view.is_contiguous() else 0
    hi = lo + view.numel * storage_item
    return -(-hi // 4) * 4 - lo // 4 * 4


@pytest.mark.parametrize("dtype", ["f32", "f16", "i32", "bool"])
def test_views_read_back_their_own_bytes_only(gpu, rng, monkeypatch, dtype):
    if dtype == "f16" and not gpu.supports(sc.f16):
        pytest.skip("this adapter has no shader-f16")
    arr = random_array(rng, dtype)
    x = sc.tensor(arr, device=gpu)
    spy = CopySpy(monkeypatch, gpu)
    storage_item = 4 if dtype == "bool" else arr.itemsize
    for name, index in VIEWS.items():
        view = x[index]
        before = gpu.stats["read_bytes"]
        got = view.numpy()
        np.testing.assert_array_equal(got, arr[index], err_msg=name)
        assert got.dtype == arr.dtype and got.shape == arr[index].shape, name
        copies = spy.take()
        want = expected_copy(view, storage_item)
        assert sum(size for _, size in copies) == want, (name, copies)
        assert gpu.stats["read_bytes"] - before == want, name
        assert all(off % 4 == 0 and size % 4 == 0 for off, size in copies), (name, copies)
        assert want < arr.size * storage_item, name  # never the whole buffer


def test_a_range_across_chunks_reads_each_part_of_it(gpu, rng, monkeypatch):
    low = WebGPUBackend(
        gpu=gpu.gpu, limits={"max_storage_buffer_binding_size": 65536, "max_buffer_size": 131072}
    )
    arr = rng.standard_normal(100_000).astype(np.float32)  # 400 KB: four chunks of 128 KiB
    x = sc.tensor(arr, device=low)
    assert len(x._buf.handle.chunks) == 4
    spy = CopySpy(monkeypatch, low)
    per_chunk = 131072 // 4
    index = np.s_[per_chunk - 5 : 2 * per_chunk + 3]  # the end of one, all of the next, a bit
    np.testing.assert_array_equal(x[index].numpy(), arr[index])
    assert spy.take() == [(131072 - 20, 20), (0, 131072), (0, 12)]


def test_tolist_item_and_empty_views_read_only_what_they_show(gpu, rng, monkeypatch):
    arr = rng.standard_normal(SHAPE).astype(np.float32)
    x = sc.tensor(arr, device=gpu)
    spy = CopySpy(monkeypatch, gpu)
    assert x[2, 3].item() == float(arr[2, 3])
    assert x[5].tolist() == arr[5].tolist()
    assert x[3:3].numpy().shape == (0, 13)
    assert spy.take() == [(4 * (2 * 13 + 3), 4), (4 * 5 * 13, 4 * 13)]
