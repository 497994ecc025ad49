"""Text generation from a language model (run layer): one generator for the CLI, Python
and the tab.

``generate(model, prompt_ids, *, max_new, temperature, top_k, top_p, seed, device,
context)`` continues ``prompt_ids`` (one row of token ids, or several rows of one
length) by ``max_new`` tokens; ``stream`` yields them one step at a time. Token t
(counted from 0) of row b is chosen so:

1. **Logits.** The model runs on the text so far (prompt + tokens before t) while it
   fits ``context`` ids, else on its last ``context`` ids (the window slides by one per
   token: the model never sees more positions than it was trained on). The logits of
   the window's last position are read to the host (floats, f32 on the device). With
   ``vocab`` only its first ``vocab`` logits are candidates: a record's head may be
   wider than its text's vocabulary, and an id the vocabulary cannot write is no text.
2. **Greedy** (``temperature`` 0): the id of the largest logit, the lowest id among
   equal ones (a NaN counts as the largest, as in ``argmax``). No draw is read.
3. **Filter** (in f64 on the host): z_i = logit_i / temperature. ``top_k`` keeps the
   k largest z (equal values: the lower id first). Then p = softmax(z) over the kept
   ids (exp(z_i - max z), divided by their sum taken in increasing id order).
   ``top_p`` (nucleus) walks the kept ids by decreasing p (equal values: the lower id
   first) and keeps the shortest run whose running sum of p reaches ``top_p``; p is
   renormalised over what is left (divided by its sum, in increasing id order).
4. **Draw.** u = element b of draw t of the Philox stream ``sample`` of ``seed`` at
   step 0 (``base.rng``: ``uniform(stream_key(seed, "sample"), rows, t, 0)[b]``, the
   top 24 bits of a uint32 times 2^-24, in [0, 1)): one uniform per token.
5. **Inverse CDF.** Walking the kept ids in increasing order and summing their p, the
   token is the first id whose running sum exceeds u (the last kept id when rounding
   leaves none).

So a seed names one continuation on every device whose logits agree.

**The key/value cache.** While the text fits ``context``, a model that
``decodes_incrementally`` (causal attention, positions, per-position blocks) runs
the prompt once, then only each new token, with the keys and values of earlier
positions kept (``catalog.blocks.decoding``); its logits equal a whole-window run's
within f32 rounding. Once the window slides every position's inputs change, so each
step runs the whole window, as does every step of a model that cannot be cached.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..base.rng import Generator, uniform
from ..catalog.blocks.decoding import KVCache, decodes_incrementally
from ..data.text import TextDataset
from ..devices.base import get_device
from ..ir.compiled import forward_for
from ..runtime.creation import tensor


@dataclass
class Step:
    """One generated token per row; ``logits``: each row's logits it was drawn from
    (host floats), when asked for."""

    ids: list[int]
    logits: list[list[float]] | None = None


@dataclass(frozen=True)
class Sampling:
    """How a token is chosen from logits (see the module note)."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None

    def __post_init__(self):
        t, k, p = self.temperature, self.top_k, self.top_p
        if not (isinstance(t, (int, float)) and math.isfinite(t) and t >= 0):
            raise ScellisError(f"temperature must be a number >= 0, got {t!r}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ScellisError(f"top_k must be a whole number >= 1, got {k!r}")
        if p is not None and not (isinstance(p, (int, float)) and 0 < p <= 1):
            raise ScellisError(f"top_p must lie in (0, 1], got {p!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def choose(self, logits, u: float) -> int:
        """The token of ``logits`` (one row) for the uniform draw ``u`` (steps 2-5)."""
        if self.greedy:
            return argmax(logits)
        z = [float(x) / self.temperature for x in logits]
        kept = list(range(len(z)))
        if self.top_k is not None and self.top_k < len(z):
            kept = sorted(sorted(kept, key=lambda i: (-z[i], i))[: self.top_k])
        top = max(z[i] for i in kept)
        if not math.isfinite(top):
            raise ScellisError("the model's logits are not finite: nothing to sample from")
        p = _normalised([math.exp(z[i] - top) for i in kept])
        if self.top_p is not None and self.top_p < 1:
            run, total = [], 0.0
            for j in sorted(range(len(kept)), key=lambda j: (-p[j], kept[j])):
                run.append(j)
                total += p[j]
                if total >= self.top_p:
                    break
            run.sort()
            kept, p = [kept[j] for j in run], _normalised([p[j] for j in run])
        total = 0.0
        for i, pi in zip(kept, p):
            total += pi
            if u < total:
                return i
        return kept[-1]


def _normalised(w: list[float]) -> list[float]:
    s = 0.0
    for x in w:
        s += x
    return [x / s for x in w]


def argmax(row) -> int:
    """The index of the largest value, the first among equal ones; a NaN is largest."""
    best = 0
    for i, x in enumerate(row):
        if x != x:
            return i
        if x > row[best]:
            best = i
    return best


def draws(seed: int, rows: int):
    """The uniforms of the ``sample`` stream of ``seed``: call k gives token k's, one per row."""
    gen = Generator(int(seed), "sample")
    while True:
        key, draw, step = gen.next_draw()
        yield uniform(key, rows, draw, step)


def _rows(prompt_ids) -> tuple[list[list[int]], bool]:
    """(rows of ids, whether one row was given as a flat list)."""
    ids = list(prompt_ids)
    single = not ids or not isinstance(ids[0], (list, tuple))
    rows = [[int(i) for i in ids]] if single else [[int(i) for i in r] for r in ids]
    if not rows or any(not r for r in rows):
        raise ScellisError("a prompt needs at least one token")
    if len({len(r) for r in rows}) != 1:
        raise ScellisError("the prompts of one call must have one length")
    return rows, single


def _device_of(model, device):
    if device is not None:
        return get_device(device)
    for p in model.parameters():
        return p.device
    raise ScellisError("the model has no parameters to tell its device: pass device=")


def _last_logits(out):
    out = out[0] if isinstance(out, tuple) else out
    if out.ndim != 3:
        raise ScellisError(
            f"the model returns {list(out.shape)}, not next-token logits [B, T, vocab]: "
            "it is no language model"
        )
    return out[:, out.shape[1] - 1]


async def stream(
    model,
    prompt_ids,
    *,
    max_new: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    device=None,
    context: int,
    cache: bool = True,
    keep_logits: bool = False,
    stop=None,
    vocab: int | None = None,
    forward=None,
) -> AsyncIterator[Step]:
    """Each generated token of every row, step by step (see the module note).

    ``cache=False`` runs the whole window at every step (the definition the cache is
    tested against); ``keep_logits`` hands each step's logits out too; ``stop`` (a
    callable) ends the text before the next token once it returns true; ``vocab`` keeps
    the choice among the ids a vocabulary of that size can write. ``forward`` runs a
    whole window of ``context`` ids instead of the model (the fast tier's fused
    forward, compiled for that one length; shorter windows run the model).
    """
    rule = Sampling(temperature, top_k, top_p)
    if isinstance(max_new, bool) or not isinstance(max_new, int) or max_new < 0:
        raise ScellisError(f"max_new must be a whole number >= 0, got {max_new!r}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 1:
        raise ScellisError(f"context must be a whole number >= 1, got {context!r}")
    seqs, _ = _rows(prompt_ids)
    dev = _device_of(model, device)
    kv = KVCache() if cache and len(seqs[0]) < context and decodes_incrementally(model) else None
    us = draws(seed, len(seqs))
    was_training = model.training
    model.eval()
    try:
        for _ in range(max_new):
            if stop is not None and stop():
                return
            with no_grad():
                if kv is not None and len(seqs[0]) <= context:
                    new = [s[kv.offset :] for s in seqs]
                    out = kv.run(model, tensor(new, device=dev, dtype="i32"))
                else:
                    kv = None  # the window slides: every position's inputs change
                    window = [s[-context:] for s in seqs]
                    full = forward is not None and len(window[0]) == context
                    out = (forward if full else model)(tensor(window, device=dev, dtype="i32"))
                last = _last_logits(out)
            rows = await last.read()
            u = next(us)
            ids = [rule.choose(r[:vocab], u[b]) for b, r in enumerate(rows)]
            for s, i in zip(seqs, ids):
                s.append(i)
            yield Step(ids, rows if keep_logits else None)
    finally:
        model.train(was_training)


async def generate(
    model,
    prompt_ids,
    *,
    max_new: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    device=None,
    context: int,
    cache: bool = True,
    stop=None,
) -> list:
    """The ``max_new`` generated ids (fewer once ``stop()`` is true): a list for one prompt
    row, a list per row for rows (see the module note; ``stream`` hands them out step by
    step)."""
    rows, single = _rows(prompt_ids)
    out: list[list[int]] = [[] for _ in rows]
    async for step in stream(model, rows, max_new=max_new, temperature=temperature,
                             top_k=top_k, top_p=top_p, seed=seed, device=device,
                             context=context, cache=cache, stop=stop):  # fmt: skip
        for got, i in zip(out, step.ids):
            got.append(i)
    return out[0] if single else out


@dataclass
class TextRun:
    """A trained run as a text continuer: its model, its characters, its context."""

    run: object  # run.reference.TrainedRun
    model: object
    vocab: object  # data.text.CharVocab
    context: int
    forward: object = None  # the fused forward of a fast-tier run (ir.compiled)

    def encode(self, prompt: str) -> list[int]:
        """The prompt's ids; a character the run never saw is one clear message."""
        if not prompt:
            raise ScellisError("the prompt is empty: nothing to continue")
        index = getattr(self.vocab, "index", None)  # a character vocabulary's
        for i, ch in enumerate(prompt if index is not None else ()):
            if ch not in index:
                raise ScellisError(
                    f"the prompt's character {ch!r} (at {i + 1}) is not in the vocabulary of "
                    f"run {self.run.rid} ({len(self.vocab)} characters of its training text)"
                )
        ids = self.vocab.encode(prompt)
        if not ids:
            raise ScellisError("the prompt has no tokens: nothing to continue")
        return ids

    async def continuation(self, prompt: str, **kw) -> AsyncIterator[int]:
        """Each generated id of ``prompt``'s continuation (``stream``'s sampling keywords:
        max_new, temperature, top_k, top_p, seed)."""
        ids = self.encode(prompt)
        async for step in stream(self.model, ids, context=self.context, vocab=len(self.vocab),
                                 forward=self.forward, **kw):  # fmt: skip
            yield step.ids[0]

    async def pieces(self, prompt: str, **kw) -> AsyncIterator[tuple[int, str]]:
        """Each generated id with the text it adds. With a tokenizer a token's text
        depends on its neighbours (a word's leading space, the bytes of one character),
        so the text is the prompt's and the continuation's decoded together, minus what
        was shown; a token ending inside a character adds nothing until the rest comes."""
        head = self.encode(prompt)
        ids, shown = [], self.vocab.decode(head)
        async for i in self.continuation(prompt, **kw):
            ids.append(i)
            now = self.vocab.decode(head + ids)
            if now.endswith("\ufffd") or not now.startswith(shown):
                yield i, ""
                continue
            yield i, now[len(shown) :]
            shown = now

    def decoded(self, prompt: str, ids: list[int]) -> str:
        """The text of continuation ``ids`` after ``prompt`` (decoded with the prompt, so
        a tokenizer's spaces and multi-byte characters come out as in the whole text)."""
        head = self.vocab.encode(prompt)
        base, whole = self.vocab.decode(head), self.vocab.decode(head + list(ids))
        return whole[len(base) :] if whole.startswith(base) else self.vocab.decode(ids)

    async def text(self, prompt: str, **kw) -> str:
        """The whole continuation of ``prompt`` (``continuation``'s keywords)."""
        return self.decoded(prompt, [i async for i in self.continuation(prompt, **kw)])


def text_run(run, device="reference", model=None, tier: str | None = None) -> TextRun:
    """``run`` (a ``run.reference.TrainedRun``) ready to continue text on ``device`` (with
    ``model``, its model already built, if given), under ``tier`` (default: the run's
    own; fast runs full windows through the fused forward); a run that did not train a
    language model on text is one clear message."""
    ds = run.dataset()
    if not isinstance(ds, TextDataset):
        raise ScellisError(
            f"run {run.rid} is not a language model: it trained on a series, not text "
            "(predict and evaluate use it)"
        )
    model = model if model is not None else run.model(device)
    fwd = forward_for(run.record, model, tier)
    return TextRun(run, model, ds.vocab, lm_context(run.record), None if fwd is model else fwd)


def lm_context(record: dict) -> int:
    """The context length of a language-model record: its text data's ``context``, else
    the length of its first input."""
    data = record.get("data") or {}
    if isinstance(data.get("context"), int):
        return int(data["context"])
    inputs = record.get("inputs") or {}
    for spec in inputs.values():
        shape = (spec or {}).get("shape") or []
        if len(shape) >= 2 and isinstance(shape[1], int):
            return int(shape[1])
    raise ScellisError("the record names no context length (data: context, or inputs' shape)")
