"""Text generation: the sampling procedure against a PyTorch oracle, the key/value cache
against whole-window recomputation, the window's slide, and the greedy text samples."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace

import numpy as np
import pytest

from generate.genutil import ALPHABET, tiny_lm, torch_choose
from scellis.autograd import no_grad
from scellis.base.errors import ScellisError
from scellis.base.rng import Generator, stream_key, uniform
from scellis.catalog import blocks as B
from scellis.catalog.blocks.decoding import KVCache, blockers, decodes_incrementally
from scellis.data.text import text_dataset
from scellis.run.generate import Sampling, draws, generate, stream
from scellis.run.samples import text_sample
from scellis.runtime.creation import tensor

V = len(ALPHABET)


def steps(model, prompt, **kw):
    async def go():
        return [s async for s in stream(model, prompt, keep_logits=True, **kw)]

    got = asyncio.run(go())
    return [s.ids for s in got], np.array([s.logits for s in got], dtype=np.float64)


def whole_window_logits(model, seq: list[int], context: int) -> list[float]:
    with no_grad():
        out = model(tensor([seq[-context:]], device="reference", dtype="i32"))
    return out[:, out.shape[1] - 1].tolist()[0]


def spy_lengths(model) -> list[int]:
    """The lengths of the id rows the model is called on from now on."""
    seen: list[int] = []
    embed = model.tok.forward

    def forward(idx):
        seen.append(idx.shape[1])
        return embed(idx)

    object.__setattr__(model.tok, "forward", forward)
    return seen


# -- the sampling procedure --


def _configs():
    rng = random.Random(11)
    for case in range(300):
        n = rng.randint(2, 40)
        if case % 3 == 0:  # equal logits: the tie rules decide
            logits = [float(rng.randint(-3, 3)) for _ in range(n)]
        else:
            logits = [rng.gauss(0, 3) for _ in range(n)]
        t = rng.choice([0.0, 0.3, 0.7, 1.0, 1.6])
        k = rng.choice([None, 1, 2, 5, 50])
        p = rng.choice([None, rng.uniform(0.05, 0.99)])
        yield case, logits, t, k, p


def test_sampling_equals_the_torch_oracle_on_the_philox_draws():
    chosen = set()
    for case, logits, t, k, p in _configs():
        (u,) = uniform(stream_key(case, "sample"), 1, 0, 0)
        got = Sampling(t, k, p).choose(logits, u)
        assert got == torch_choose(logits, u, t, k, p), (case, t, k, p)
        chosen.add((case % 3 == 0, got == int(np.argmax(logits))))
    assert len(chosen) == 4  # ties and not, the argmax and other tokens were drawn


def test_the_draws_are_one_uniform_per_token_from_the_sample_stream():
    gen = Generator(9, "sample")
    it = draws(9, 3)
    for t in range(4):
        assert next(it) == uniform(gen.key, 3, t, 0)
    assert gen.key == stream_key(9, "sample")


def test_filters_keep_what_they_promise():
    logits = [0.0, 3.0, 1.0, 2.0, -1.0]
    rule = Sampling(1.0, top_k=2)
    assert {rule.choose(logits, u / 64) for u in range(64)} == {1, 3}
    nucleus = Sampling(1.0, top_p=0.5)  # p(1) = 0.64 alone reaches 0.5
    assert {nucleus.choose(logits, u / 64) for u in range(64)} == {1}
    assert Sampling(0).choose([1.0, 5.0, 5.0], 0.9) == 1  # greedy: the first maximum
    assert Sampling(0).choose([1.0, float("nan"), 5.0], 0.0) == 1


@pytest.mark.parametrize(
    "kw, word",
    [
        ({"temperature": -1}, "temperature"),
        ({"top_k": 0}, "top_k"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_new": -1}, "max_new"),
        ({"context": 0}, "context"),
    ],
)
def test_bad_settings_are_one_clear_message(kw, word):
    model = tiny_lm()
    args = {"max_new": 2, "context": 8, **kw}
    with pytest.raises(ScellisError, match=word):
        asyncio.run(generate(model, [1, 2], **args))


def test_prompts_must_be_rows_of_one_length():
    model = tiny_lm()
    with pytest.raises(ScellisError, match="one length"):
        asyncio.run(generate(model, [[1, 2], [3]], max_new=1, context=8))
    with pytest.raises(ScellisError, match="at least one token"):
        asyncio.run(generate(model, [], max_new=1, context=8))


# -- the key/value cache --


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rotary"])
def test_cached_decoding_equals_whole_window_recomputation(position):
    model = tiny_lm(position=position, context=8)
    assert decodes_incrementally(model)
    kw = dict(max_new=10, context=8, temperature=0, device="reference")
    prompt = [[1, 2, 3], [4, 0, 9]]
    seen = spy_lengths(model)
    ids, cached = steps(model, prompt, **kw)
    # the prompt once, then one new token a step while the text fits 8; then the window
    assert seen == [3, 1, 1, 1, 1, 1, 8, 8, 8, 8]
    ids_full, full = steps(model, prompt, cache=False, **kw)
    assert seen[10:] == [3, 4, 5, 6, 7, 8, 8, 8, 8, 8]
    assert ids == ids_full
    # every generated position's logits, f32 rounding apart
    np.testing.assert_allclose(cached, full, rtol=1e-5, atol=1e-5)


def test_greedy_is_the_argmax_of_whole_window_recomputation():
    model = tiny_lm(context=8)
    seq = [2, 7, 1]
    ids, _ = steps(model, seq, max_new=9, context=8, temperature=0)
    for (i,) in ids:
        want = whole_window_logits(model, seq, 8)
        assert i == int(np.argmax(want))
        seq.append(i)
    assert len(seq) > 8  # the window slid


def test_sampled_tokens_equal_the_oracle_on_the_model_logits():
    model = tiny_lm(position="rotary", context=16)
    kw = dict(max_new=12, context=16, temperature=0.9, top_k=6, top_p=0.9, seed=4)
    prompt = [[1, 2, 3, 4], [5, 6, 7, 8]]
    ids, logits = steps(model, prompt, **kw)
    us = draws(4, 2)
    for t, row in enumerate(ids):
        u = next(us)
        want = [torch_choose(logits[t, b].tolist(), u[b], 0.9, 6, 0.9) for b in range(2)]
        assert row == want
    # the same seed, the same text; the uncached run samples the same tokens
    assert steps(model, prompt, **kw)[0] == ids
    assert steps(model, prompt, cache=False, **kw)[0] == ids
    assert steps(model, prompt, **{**kw, "seed": 5})[0] != ids


def test_generate_returns_the_ids_of_one_row_or_of_each():
    model = tiny_lm()
    one = asyncio.run(generate(model, [1, 2], max_new=3, context=8, temperature=0))
    rows = asyncio.run(generate(model, [[1, 2], [1, 2]], max_new=3, context=8, temperature=0))
    assert len(one) == 3 and rows == [one, one]
    assert asyncio.run(generate(model, [1], max_new=0, context=8)) == []


def test_models_that_mix_positions_run_whole_windows():
    model = tiny_lm(kind="encoder")
    assert not decodes_incrementally(model)
    assert any(b.endswith("attn") for b in blockers(model))
    kw = dict(max_new=4, context=8, temperature=0)
    a, la = steps(model, [1, 2, 3], **kw)
    b, lb = steps(model, [1, 2, 3], cache=False, **kw)
    assert a == b and np.array_equal(la, lb)


def test_training_mode_is_restored():
    model = tiny_lm().train()
    asyncio.run(generate(model, [1], max_new=1, context=8))
    assert model.training


# -- the run's text samples --


def test_text_samples_are_the_whole_window_greedy_continuations():
    model = tiny_lm(context=8)
    rng = random.Random(3)
    ds = text_dataset(ALPHABET + "".join(rng.choice(ALPHABET) for _ in range(300)), 8, 4)
    pipe = SimpleNamespace(dataset=ds, model=model, device=model.tok.weight.device,
                           train=SimpleNamespace(batch_size=4))  # fmt: skip
    got = asyncio.run(text_sample(pipe, 6))
    # what the samples computed before the generator: argmax on the device, slid by one
    windows = [list(w) for w in ds.x_val[:4]]
    outs = [[] for _ in windows]
    with no_grad():
        for _ in range(6):
            logits = model(tensor(windows, device="reference", dtype="i32"))
            nxt = logits[:, 7].argmax(axis=-1).tolist()
            for w, o, c in zip(windows, outs, nxt):
                o.append(c)
                w.append(c)
                del w[0]
    assert [r["generated"] for r in got.rows] == [ds.vocab.decode(o) for o in outs]


# -- the cache on blocks --


def chunked(module, x, cuts, device="reference"):
    """``module`` on ``x`` [B, T, E] in chunks (cached) and whole: both outputs."""
    kv = KVCache()
    parts, start = [], 0
    with no_grad():
        for end in [*cuts, x.shape[1]]:
            parts.append(np.asarray(kv.run(module, x[:, start:end]).tolist()))
            start = end
        whole = np.asarray(module(x).tolist())
    assert kv.offset == x.shape[1]
    return np.concatenate(parts, axis=1), whole


@pytest.mark.parametrize("rotary", [False, True])
def test_chunks_after_the_first_attend_to_the_cache_with_their_offset(rotary):
    cfg = B.TransformerConfig(16, 2, 2, kind="decoder", rotary=rotary, attention="naive")
    stack = B.Transformer(cfg, device="reference", gen=Generator(1, "init")).eval()
    x = tensor(np.random.default_rng(0).standard_normal((2, 10, 16)).tolist())
    got, want = chunked(stack, x, [4, 5, 7])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_cache_refuses_a_model_that_mixes_positions():
    cfg = B.TransformerConfig(16, 2, 1, kind="encoder")
    stack = B.Transformer(cfg, device="reference", gen=Generator(1, "init")).eval()
    x = tensor(np.zeros((1, 3, 16)).tolist())
    with pytest.raises(ScellisError, match=r"blocks\.0\.attn may mix positions"):
        KVCache().run(stack, x)


def test_stop_ends_the_text_before_the_next_token():
    """``stop`` is asked before each token: true at the sixth ask, five tokens come, the
    first five of the text it cut short."""
    model = tiny_lm(context=8)
    kw = dict(max_new=12, temperature=0.9, top_k=5, seed=7, context=8)
    whole = asyncio.run(generate(model, [1, 2, 3], **kw))
    asks = iter(range(100))
    cut = asyncio.run(generate(model, [1, 2, 3], stop=lambda: next(asks) == 5, **kw))
    assert cut == whole[:5] and len(whole) == 12
