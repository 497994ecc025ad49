"""QLoRA in the tab, as a first-time user does it: a Hugging Face Llama folder (random
weights, saved by transformers) picked whole, "QLoRA: LoRA on a 4-bit NF4 base" chosen
beside the import, text data pinned, Train. Held to the native engine on the reference
device: the same record text (the fine-tune edit's), the quantised model's logits, the
first loss, and the memory plan's count of the codes and scales. Screenshots at three
widths."""

from __future__ import annotations

import asyncio
import json
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from scellis.webapp import import_api, model_api, run_api
from tinymodels import torch, transformers

from .conftest import screenshot, start_training, train_beside_native
from .test_import_tab import IMPORT_MS, _import, _shows, _tab_forward
from .ui import full_screen, set_record

pytestmark = pytest.mark.browser

HIDDEN, FF, VOCAB, CONTEXT, LAYERS = 16, 24, 96, 12, 1
DATA = f"""
batch_size: 4
data:
  source: bundled:python_help_topics.txt
  format: text
  tokenizer: char
  context: {CONTEXT}
  max_chars: 3000
  val_fraction: 0.1
"""
RUN = dict(max_steps=3, log_every=1, validate=False, samples=False, drop_last=True)
RANK = 4
# dense weights per decoder layer (q, k, v, o, gate, up, down) and the untied head
DENSE = 7 * LAYERS + 1
# sequential f32 products and reductions from the ids to the logits of one layer: norm,
# q/k/v, scores, softmax, weighted sum, o, norm, gate/up, down, final norm, head
CHAIN = 12


def _llama(folder, seed: int) -> None:
    cfg = transformers.LlamaConfig(
        hidden_size=HIDDEN, intermediate_size=FF, num_hidden_layers=LAYERS,
        num_attention_heads=2, num_key_value_heads=1, vocab_size=VOCAB,
        max_position_embeddings=CONTEXT, bos_token_id=0, eos_token_id=0,
        tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(seed)
    transformers.LlamaForCausalLM(cfg).save_pretrained(folder)


def _tolerance() -> float:
    """Relative error two f32 devices may differ by: each product of the chain rounds at
    most (K + 1) times in its sum (K: the widest inner dimension), each at 2^-23; the NF4
    codes are the same bits on both (the quantiser's integer decisions are exact), so only
    the f32 rounding differs; 4x for WGSL's exp/rsqrt (a few ulps each) on the way."""
    return 4 * CHAIN * (max(HIDDEN, FF) + 1) * 2.0**-23


def _in_thread(fn, *args):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


def _native_losses(text: str, store) -> list[float]:
    from scellis.webapp import api

    args = json.dumps({"record_text": text, "device": "reference", "store": str(store), **RUN})

    async def go():
        return [ev["loss"] async for ev in api.dispatch("train", args) if ev["kind"] == "log"]

    return asyncio.run(go())


def _choose(page, method: str, rank: int | None = None) -> dict:
    """Pick ``method`` (and ``rank``) in the fine-tune control; Model View's projection."""
    page.select_option(".import-finetune .ft-method", method)
    want = {"method": method}
    if rank is not None:
        _settled(page, want)
        page.fill(".import-finetune .ft-rank", str(rank))
        page.dispatch_event(".import-finetune .ft-rank", "change")
        want["rank"] = rank
    return _settled(page, want)


def _settled(page, want: dict) -> dict:
    page.wait_for_function(
        "w => { const r = window.scellisApp.modelView.result;"
        " return r && r.finetune && Object.entries(w).every(([k, v]) => r.finetune[k] === v)"
        " && !document.querySelector('#model-view').dataset.busy; }",
        arg=want,
        timeout=60_000,
    )
    return page.evaluate("window.scellisApp.modelView.result")


def _plan_box(page, text: str) -> dict:
    """The plan the tab worked out for the record ``text`` (the box's verdict shown)."""
    page.wait_for_function(
        "() => ['green', 'yellow', 'red'].includes(document.querySelector('#run-plan')"
        ".dataset.verdict)",
        timeout=IMPORT_MS,
    )
    return page.evaluate("t => window.scellisClient.call('plan', {record_text: t})", text)


def test_hf_llama_imports_and_qlora_fine_tunes_as_natively(engine_page, tmp_path):
    page = engine_page
    full_screen(page, False)
    page.set_viewport_size({"width": 1440, "height": 900})
    _llama(tmp_path / "whole" / "llama", seed=5)
    tab = _import(page, ".import-folder-input", str(tmp_path / "whole" / "llama"))
    assert tab["error"] is None, tab["error"]
    assert "pick how to fine-tune it below" in tab["status"]
    store = tmp_path / "native"
    native = import_api.import_model(str(tmp_path / "whole"), store=str(store))
    assert tab["last"]["record"] == native["record"]
    _shows(page, native["record"], native["blocks"])
    assert page.is_visible(".import-finetune"), "no fine-tune choice after an import"
    assert page.input_value(".import-finetune .ft-method") == "full"

    lora = _choose(page, "lora", RANK)
    lora_plan = _plan_box(page, lora["text"])
    qlora = _choose(page, "qlora")
    # the control's edit is the engine's: the same text the native edit writes
    edit = {"kind": "finetune", "method": "qlora", "rank": RANK}
    assert qlora["text"] == model_api.edit(native["record"], edit)["text"]
    assert "quantize_base: nf4" in page.inner_text("#model-view .mv-code")
    assert qlora["ok"], qlora["diagnostics"]

    # the plan in the tab counts the frozen base as codes and scales, as natively
    plan = _plan_box(page, qlora["text"])
    want = run_api.plan(qlora["text"], "reference")["quantized"]
    assert plan["quantized"] == want and want["weights"] == DENSE, (plan["quantized"], want)
    saved = lora_plan["classes"]["parameters"] - plan["classes"]["parameters"]
    assert saved > 0.5 * 4 * (VOCAB * HIDDEN + LAYERS * (4 * HIDDEN * HIDDEN + 3 * HIDDEN * FF))
    page.wait_for_function(
        "() => /NF4 codes and scales/.test(document.querySelector('#run-plan').textContent)",
        timeout=IMPORT_MS,
    )

    # the quantised model's logits on the same ids: the WGSL kernels decode as NumPy does
    full = _tab_forward(page, qlora["text"])
    ref = _in_thread(
        asyncio.run,
        import_api.forward(qlora["text"], full["inputs"], "reference", str(store), full=True),
    )
    got, exp = np.asarray(full["outputs"]), np.asarray(ref["outputs"])
    tol = _tolerance()
    assert np.abs(exp).max() > 0
    np.testing.assert_allclose(got, exp, rtol=tol, atol=tol * np.abs(exp).max())
    # NF4 moved the logits: a forward of the f32 base is elsewhere
    plain = _in_thread(
        asyncio.run,
        import_api.forward(native["record"], full["inputs"], "reference", str(store), full=True),
    )
    assert np.abs(np.asarray(plain["outputs"]) - exp).max() > 100 * tol * np.abs(exp).max()

    text = qlora["text"] + DATA
    set_record(page, text)
    start_training(page, RUN)
    native_losses = train_beside_native(page, _native_losses, text, store, timeout_ms=IMPORT_MS)
    events = page.evaluate("window.scellisApp.run.events")
    losses = [e["loss"] for e in events if e["kind"] == "log"]
    assert len(losses) == len(native_losses) == RUN["max_steps"]
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] != losses[0], "the adapters did not move the loss"
    # the same seed, batch and quantised base: the first loss within the derived bound
    assert abs(losses[0] - native_losses[0]) <= tol * abs(native_losses[0]), (losses, native_losses)
    np.testing.assert_allclose(losses, native_losses, rtol=1e-3)  # Adam's steps after it
    ran = next(e for e in events if e["kind"] == "plan")
    assert ran["quantized"] == want

    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(400)
        screenshot(page, f"qlora_{width}")
    page.select_option("#run-example", "lstm_forecaster")  # the next tests' example
    page.wait_for_selector(".import-finetune", state="hidden")
