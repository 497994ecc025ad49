"""The image blocks (nn/conv2d, nn/batch_norm2d, nn/max_pool2d, nn/avg_pool2d) against
torch's layers with the same weights, and from an SML record: it validates, builds and
takes a torch model's state dict key for key."""

from __future__ import annotations

import numpy as np
import torch

import scellis as sc
from scellis.catalog import blocks as B
from scellis.catalog.sml_registry import catalog_registry
from scellis.model.build import RecordModel
from scellis.sml import parse, validate

RECORD = """\
model: test/image@1
inputs:
  img: { shape: [batch, 3, 8, 8], dtype: f32 }
blocks:
  conv: { block_id: nn/conv2d, in: img, in_channels: 3, out_channels: 4, kernel_size: 3,
          padding: same, bias: false }
  bn: { block_id: nn/batch_norm2d, in: conv, num_features: 4, momentum: 0.2 }
  pool: { block_id: nn/max_pool2d, in: bn, kernel_size: 2 }
  avg: { block_id: nn/avg_pool2d, in: pool, kernel_size: 3, stride: 1, padding: 1 }
outputs: [avg]
determinism_tier: debug
"""


def _torch_twin():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding="same", bias=False),
        torch.nn.BatchNorm2d(4, momentum=0.2),
        torch.nn.MaxPool2d(2),
        torch.nn.AvgPool2d(3, 1, 1),
    )


def test_a_record_of_image_blocks_matches_torch_over_two_batches():
    doc = parse(RECORD, "m.sml")
    assert [str(d) for d in validate(doc, catalog_registry())] == []
    ours, theirs = RecordModel(doc.data), _torch_twin()
    ours_names = {"0.": "conv.", "1.": "bn."}  # torch's Sequential indices, the record's names
    state = {
        ours_names[k[:2]] + k[2:]: sc.tensor(v.numpy()) for k, v in theirs.state_dict().items()
    }
    ours.load_state_dict(state)  # batch norm's step counter is dropped on the way in
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
        xs = sc.tensor(x, requires_grad=True)
        xt = torch.from_numpy(x).requires_grad_()
        got, want = ours(xs), theirs(xt)
        np.testing.assert_allclose(np.asarray(got.tolist()), want.detach().numpy(), atol=1e-5)
        (got * got).sum().backward()
        (want * want).sum().backward()
        np.testing.assert_allclose(np.asarray(xs.grad.tolist()), xt.grad.numpy(), atol=1e-4)
        np.testing.assert_allclose(np.asarray(ours.conv.weight.grad.tolist()),
                                   theirs[0].weight.grad.numpy(), rtol=1e-4, atol=1e-4)  # fmt: skip
        np.testing.assert_allclose(np.asarray(ours.bn.running_var.tolist()),
                                   theirs[1].running_var.numpy(), rtol=1e-5)  # fmt: skip


def test_conv_block_with_groups_and_stride_matches_torch():
    block = B.Conv2d(B.Conv2dConfig(4, 6, 3, stride=2, padding=1, dilation=1, groups=2))
    twin = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    assert list(block.state_dict()) == list(twin.state_dict())
    block.load_state_dict({k: sc.tensor(v.numpy()) for k, v in twin.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((1, 4, 7, 6)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(block(sc.tensor(x)).tolist()),
                               twin(torch.from_numpy(x)).detach().numpy(), atol=1e-5)  # fmt: skip
