"""A quantised base is made one weight at a time: the model is bit for bit the one an
eager construction makes (every weight drawn, the pre-trained ones loaded over them, then
the base quantised), and the device never holds the base at full precision. The memory
plan's construction figure is the device's own count for drawn weights and bounds it for
loaded ones."""

from __future__ import annotations

import os
import pathlib
import tempfile

import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.base.rng import Generator  # noqa: E402
from scellis.catalog.peft import apply_finetune  # noqa: E402
from scellis.codecs.hf.codec import HFCodec, HFConfig  # noqa: E402
from scellis.codecs.pretrained import pretrained_model  # noqa: E402
from scellis.codecs.weights import load_into  # noqa: E402
from scellis.devices import get_device  # noqa: E402
from scellis.ir.memory import profile  # noqa: E402
from scellis.ir.trace import trace  # noqa: E402
from scellis.model.build import RecordModel  # noqa: E402
from tinymodels import _redrawn, transformers  # noqa: E402

# every dense block adapted, NF4 with double-quantised scales over 16-value blocks; and
# int8 under adapters on q and v only, with one dense weight and the first norms trained
# (so that weight must stay f32: what gets quantised is decided by the whole section)
FINETUNES = {
    "nf4-all": {
        "adapters": [{"block_id": "peft/lora", "target_modules": "*", "rank": 2}],
        "quantize_base": {"format": "nf4", "block_size": 16, "double_quant": True},
    },
    "int8-qv": {
        "adapters": [{"block_id": "peft/lora", "target_modules": ["q", "v"], "rank": 2}],
        "quantize_base": "int8",
        "train": ["*ln1*", "*attn.o.weight"],
    },
}


def _imported(family: str, layers: int = 2, hidden: int = 32, vocab: int = 40, seed: int = 3):
    folder = tempfile.mkdtemp()
    if family == "gpt2":
        cfg = transformers.GPT2Config(n_layer=layers, n_embd=hidden, n_head=2, vocab_size=vocab,
                                      n_positions=12, bos_token_id=0, eos_token_id=0)  # fmt: skip
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        cfg = transformers.LlamaConfig(
            hidden_size=hidden, intermediate_size=hidden * 11 // 4, num_hidden_layers=layers,
            num_attention_heads=4, num_key_value_heads=2, vocab_size=vocab,
            max_position_embeddings=12, bos_token_id=0, eos_token_id=0,
            tie_word_embeddings=family == "llama-tied",
        )  # fmt: skip
        model = transformers.LlamaForCausalLM(cfg)
    _redrawn(model, seed).save_pretrained(folder)
    return HFCodec(HFConfig()).read(pathlib.Path(folder))


def _eager(record: dict, tensors, dev):
    model = RecordModel(record, device=dev, gen=Generator(0, "init"))
    if tensors is not None:
        load_into(model, tensors)
    apply_finetune(model, record["finetune"], seed=0)
    return model


@pytest.mark.webgpu
@pytest.mark.parametrize("family", ["llama-tied", "gpt2"])
@pytest.mark.parametrize("finetune", list(FINETUNES))
def test_the_model_is_the_one_an_eager_construction_makes(gpu, family, finetune):
    imp = _imported(family)
    record = {**imp.record, "finetune": FINETUNES[finetune]}
    for device in ("reference", gpu):
        dev = get_device(device)
        for tensors in (imp.tensors, None):  # loaded, and drawn from the record's seed
            want = dict(_eager(record, tensors, dev).named_parameters())
            got = dict(pretrained_model(record, tensors, device=dev).named_parameters())
            assert list(got) == list(want)
            assert any(n.endswith("weight_codes") for n in got)
            for name, p in want.items():
                q = got[name]
                assert (q.device, q.dtype, q.requires_grad) == (dev, p.dtype, p.requires_grad)
                assert q.tolist() == p.tolist(), f"{device} {name}"


@pytest.mark.webgpu
def test_the_device_never_holds_the_base_at_full_precision(gpu):
    # a small vocabulary: the embedding (drawn from a normal, four tensors of its size at
    # once) stays small beside the base
    imp = _imported("llama", layers=8, hidden=128, vocab=256)
    record = {**imp.record, "finetune": FINETUNES["nf4-all"], "batch_size": 2}
    dev = get_device(gpu)
    held, model = {}, None
    for how in ("eager", "drawn", "loaded"):
        model = None
        dev.empty_pool()  # the last model's storages given back: this build's own count
        dev.reset_peak()
        if how == "eager":
            model = _eager(record, imp.tensors, dev)
        else:
            model = pretrained_model(record, imp.tensors if how == "loaded" else None, device=dev)
        quantised = [m.quant for _, m in model.named_modules() if getattr(m, "quant", None)]
        base = sum(4 * q.numel for q in quantised)  # the quantised weights in f32
        held[how] = dev.memory()["held_peak_bytes"] - dev.memory()["live_bytes"]
    # the eager order holds every weight at full precision at once; this one a few
    assert len(quantised) == 8 * 7 + 1
    assert held["eager"] >= base
    assert max(held["drawn"], held["loaded"]) < base / 3
    # the plan's construction peak against the device's own count
    planned = profile(trace(record, device="webgpu"), "webgpu").build_peak
    for tensors in (None, imp.tensors):
        model = None
        dev.empty_pool()
        dev.reset_peak()
        before = dev.memory()["live_bytes"]  # the device's cached constants
        model = pretrained_model(record, tensors, device=dev)
        built = dev.memory()["held_peak_bytes"] - before
        # drawn: the same ops as the trace's (a device that ran other work first holds a
        # storage or so more, its caches'); loaded: uploads in place of the draws
        assert abs(built - planned) <= planned / 50 if tensors is None else built <= planned
