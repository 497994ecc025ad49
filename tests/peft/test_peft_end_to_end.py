"""Fine-tuning end to end: a model trained in PyTorch, exported to ONNX and to a
state dict, imported, LoRA fine-tuned on new data, checkpointed, resumed exactly, merged
and exported to safetensors that PyTorch loads with matching outputs.

Reference device, f32, ``debug`` tier: the resumed run must equal the uninterrupted one
bit for bit (weights, optimizer moments, logged losses).
"""

from __future__ import annotations

import asyncio
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
st_torch = pytest.importorskip("safetensors.torch")

from peftutil import arr  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.catalog import peft  # noqa: E402
from scellis.catalog.losses import CrossEntropyLoss  # noqa: E402
from scellis.catalog.optim import AdamW  # noqa: E402
from scellis.codecs import make, read  # noqa: E402
from scellis.codecs.record import check, record_text  # noqa: E402
from scellis.codecs.weights import load_into, state_of  # noqa: E402
from scellis.model import RecordModel, finetuned_record  # noqa: E402
from scellis.store.objects import ObjectStore  # noqa: E402
from scellis.train import Batches, TrainState, run  # noqa: E402
from scellis.train import checkpoint as ckpt  # noqa: E402

FINETUNE = {
    "adapters": [{"block_id": "peft/lora", "target_modules": ["a", "b", "c"], "rank": 2,
                  "alpha": 4.0}],
}  # fmt: skip
STEPS, HALF = 8, 4


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 16)
        self.ln = torch.nn.LayerNorm(16)
        self.b = torch.nn.Linear(16, 16)
        self.c = torch.nn.Linear(16, 3)

    def forward(self, x):
        h = self.ln(torch.relu(self.a(x)))
        return self.c(torch.nn.functional.gelu(self.b(h)))


def _task(seed: int, n: int, w_seed: int):
    """Inputs and class labels of a random linear rule (the task differs with w_seed)."""
    x = np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32)
    w = np.random.default_rng(w_seed).standard_normal((4, 3))
    return x, (x @ w).argmax(1).astype(np.int32)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """The PyTorch side: train, then write model.pt (state dict) and model.onnx."""
    tmp = tmp_path_factory.mktemp("e2e")
    torch.manual_seed(0)
    net = Net()
    x, y = _task(1, 64, w_seed=10)
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    for _ in range(20):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(y).long()
                                          ).backward()  # fmt: skip
        opt.step()
    net.eval()
    torch.save(net.state_dict(), tmp / "model.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.from_numpy(x[:2]),), str(tmp / "model.onnx"), dynamo=False,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}}, opset_version=17)  # fmt: skip
    return tmp, net


def _imported(tmp):
    """The record from ONNX, the weights from the torch state dict (both codecs)."""
    onnx_in = read(tmp / "model.onnx")
    pt_in = read(tmp / "model.pt")
    record = dict(onnx_in.record, finetune=FINETUNE, determinism_tier="debug", seed=7)
    return check(record_text(record)), onnx_in, pt_in


def _finetune_setup(tmp):
    record, _, pt_in = _imported(tmp)
    model = RecordModel(record)
    load_into(model, pt_in.tensors)
    peft.apply_finetune(model, record["finetune"], seed=record["seed"])
    opt = AdamW(model, lr=0.03, weight_decay=0.0)
    x, y = _task(2, 48, w_seed=20)  # new data: another rule
    data = Batches(x.tolist(), y.tolist(), 8)
    return record, model, TrainState(model, opt, seed=record["seed"]), data


def _train(ts, data, max_steps, events):
    return run(
        ts.model, CrossEntropyLoss(), ts.optimizer, data, epochs=100, max_steps=max_steps,
        determinism_tier="debug", seed=ts.seed, state=ts, log_every=1, on_event=events.append,
    )  # fmt: skip


def test_torch_to_scellis_lora_checkpoint_resume_and_back(pretrained, tmp_path):
    tmp, net = pretrained
    record, onnx_in, pt_in = _imported(tmp)
    # 1. both imports carry the same weights, and the imported model is torch's (and ORT's)
    assert set(onnx_in.tensors) == set(pt_in.tensors) == set(net.state_dict())
    for k, t in pt_in.tensors.items():
        assert onnx_in.tensors[k].data == t.data, k
    probe = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    want = net(torch.from_numpy(probe)).detach().numpy()
    base = RecordModel(record).eval()
    load_into(base, pt_in.tensors)
    np.testing.assert_allclose(arr(base(sc.tensor(probe))), want, rtol=1e-5, atol=1e-5)
    sess = ort.InferenceSession(str(tmp / "model.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"x": probe})[0], want, rtol=1e-5, atol=1e-5)

    # 2. LoRA fine-tuning on new data, uninterrupted
    _, model, ts, data = _finetune_setup(tmp)
    trained = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trained and all(".lora_" in n for n in trained)
    full_events: list = []
    _train(ts, data, STEPS, full_events)
    losses = [e["loss"] for e in full_events if e["kind"] == "log"]
    assert len(losses) == STEPS and losses[-1] < losses[0]
    full_state = {k: arr(v) for k, v in model.state_dict().items()}
    full_opt = ts.optimizer.state_dict()["param_groups"][0]

    # 3. the same run stopped half way, checkpointed, and resumed into fresh objects
    objects = ObjectStore(tmp_path / "store")
    _, _, ts1, data1 = _finetune_setup(tmp)
    first: list = []
    _train(ts1, data1, HALF, first)
    rec_hash = objects.put(record_text(record).encode())  # the record, finetune included
    h, manifest = asyncio.run(ckpt.save(ts1, objects, record=rec_hash, dataset=None, tier="debug"))
    assert manifest["step"] == HALF
    _, model2, ts2, data2 = _finetune_setup(tmp)
    ckpt.load(ts2, objects, h)
    second: list = []
    _train(ts2, data2, STEPS, second)
    resumed = [e["loss"] for e in first + second if e["kind"] == "log"]
    assert resumed == losses  # bitwise: the same floats
    for k, v in model2.state_dict().items():
        np.testing.assert_array_equal(arr(v), full_state[k], err_msg=k)
    opt2 = ts2.optimizer.state_dict()["param_groups"][0]
    assert opt2["steps"] == full_opt["steps"] == [STEPS] * len(trained)
    for k in full_opt["state"]:
        np.testing.assert_array_equal(arr(opt2["state"][k]), arr(full_opt["state"][k]))

    # 4. merge, export to safetensors, load into PyTorch: the same outputs
    model2.eval()
    adapted = arr(model2(sc.tensor(probe)))
    assert np.abs(adapted - want).max() > 1e-3  # fine-tuning changed the model
    peft.merge_lora(model2)
    plain = finetuned_record(record)
    out = tmp_path / "finetuned.safetensors"
    make("codec/safetensors").write(out, state_of(model2), plain)
    back = Net()
    back.load_state_dict(st_torch.load_file(str(out)), strict=True)
    got = back.eval()(torch.from_numpy(probe)).detach().numpy()
    np.testing.assert_allclose(got, adapted, rtol=1e-5, atol=1e-5)
    # and the file opens back in Scellis as a record plus weights
    again = read(out)
    assert again.record["blocks"] == plain["blocks"] and "finetune" not in again.record
