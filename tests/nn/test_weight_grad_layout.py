"""A dense layer's weight gradient comes out contiguous, and equal to torch's.

``nn.Linear`` computes ``x @ W^T`` with the weight read as a transposed view; its
gradient is made as the transpose of ``g^T x``, so ``W.grad`` is a contiguous tensor
and neither the optimizer's gather nor a gradient reduction copies it. Checked against
torch (float64) on random inputs on the reference device and WebGPU, for 2-D and
batched (3-D) inputs, and in a traced training step: no ``copy`` runs in the update.
"""

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

import scellis as sc
from scellis import nn
from scellis.ir.record import load_record
from scellis.ir.trace import trace
from scellis.train.guard import loop_update

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
DEVICES = ["reference", pytest.param("webgpu", marks=pytest.mark.webgpu)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x_shape", [(6, 5), (2, 3, 5)])
def test_linear_weight_grad_is_contiguous_and_torchs(device, x_shape):
    rng = np.random.default_rng(4)
    lin = nn.Linear(5, 7).to(device)
    x0 = rng.standard_normal(x_shape).astype(np.float32)
    x = sc.tensor(x0, device=device, requires_grad=True)
    w = rng.standard_normal((7,)).astype(np.float32)
    (lin(x) * sc.tensor(w, device=device)).sum().backward()
    tl = torch.nn.Linear(5, 7).double()
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(np.asarray(lin.weight.tolist())))
        tl.bias.copy_(torch.tensor(np.asarray(lin.bias.tolist())))
    tx = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    (tl(tx) * torch.tensor(w, dtype=torch.float64)).sum().backward()
    assert lin.weight.grad.is_contiguous()
    for ours, theirs in ((lin.weight.grad, tl.weight.grad), (x.grad, tx.grad)):
        np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.numpy(), rtol=1e-5, atol=1e-6)


DENSE2 = Path(__file__).resolve().parents[1] / "plan" / "records" / "dense2_clip.sml"


def test_a_training_step_copies_no_gradient():
    tr = trace(load_record(str(DENSE2)), update=loop_update)
    ops = [e[1] for e in tr.events if e[0] == "run"]
    phases = {e[1]: e[4] for e in tr.events if e[0] == "alloc"}
    copies = [
        e for e in tr.events if e[0] == "run" and e[1] == "copy"
        and any(phases.get(v.serial) == "optimizer" for v in e[3])
    ]  # fmt: skip
    assert "adam_update" in ops and not copies
