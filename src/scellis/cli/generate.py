"""``scellis generate RUN --prompt TEXT`` (cli layer): continue a text with a trained LM.

``RUN`` is a run reference (``RUN``, ``RUN@STEP``, ``RUN:best``: ``run.reference``) of a
language model trained on text; the prompt is encoded with that text's character
vocabulary and continued by ``run.generate`` (temperature, top-k, top-p, a Philox
seed; the key/value cache while the text fits the context). The continuation is
printed as it is generated; ``--json`` prints one object at the end instead.
"""

from __future__ import annotations

import asyncio
import json
import sys

import click

from ..base.errors import ScellisError
from ..data.text import TextDataset
from ..run.generate import lm_context, stream
from ..run.reference import open_run
from .common import pick_device


def encode_prompt(vocab, prompt: str, rid: str) -> list[int]:
    """The prompt's ids; a character the run never saw is one clear message."""
    if not prompt:
        raise ScellisError("the prompt is empty: give --prompt TEXT")
    for i, ch in enumerate(prompt):
        if ch not in vocab.index:
            raise ScellisError(
                f"the prompt's character {ch!r} (at {i + 1}) is not in the vocabulary of run "
                f"{rid} ({len(vocab)} characters of its training text)"
            )
    return vocab.encode(prompt)


def generate_text(ref, prompt, *, max_new=200, temperature=1.0, top_k=None, top_p=None,
                  seed=0, store=".scellis", device="auto", json_=False,
                  out=None) -> int:  # fmt: skip
    """Print the continuation of ``prompt`` by the run ``ref``; returns the exit status."""
    out = out or sys.stdout
    run = open_run(store, ref)
    ds = run.dataset()
    if not isinstance(ds, TextDataset):
        raise ScellisError(
            f"run {run.rid} is not a language model: it trained on "
            f"{run.record.get('data', {}).get('format', 'non-text')} data, not text"
        )
    ids = encode_prompt(ds.vocab, prompt, run.rid)
    name, _ = pick_device(device)
    model = run.model(name)
    kw = dict(max_new=max_new, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
              context=lm_context(run.record))  # fmt: skip

    async def go() -> list[int]:
        got: list[int] = []
        async for step in stream(model, ids, **kw):
            got.append(step.ids[0])
            if not json_:
                out.write(ds.vocab.decode(step.ids))
                out.flush()
        return got

    got = asyncio.run(go())
    if json_:
        row = {"run": run.ref, "device": name, "prompt": prompt,
               "generated": ds.vocab.decode(got), "ids": got, **kw}  # fmt: skip
        out.write(json.dumps(row) + "\n")
    else:
        out.write("\n")
    return 0


@click.command("generate", help="Continue a text with a trained language model (a run).")
@click.argument("ref", metavar="RUN")
@click.option("--prompt", required=True, help="the text to continue")
@click.option("--max-new", default=200, show_default=True, type=click.IntRange(min=0),
              help="characters to generate")  # fmt: skip
@click.option("--temperature", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="0: greedy; below 1 sharper, above 1 flatter")  # fmt: skip
@click.option("--top-k", default=None, type=click.IntRange(min=1),
              help="sample among the k most likely tokens only")  # fmt: skip
@click.option("--top-p", default=None, type=click.FloatRange(0, 1, min_open=True),
              help="sample among the most likely tokens whose probabilities reach p")  # fmt: skip
@click.option("--seed", default=0, show_default=True, type=int,
              help="the seed of the Philox 'sample' stream")  # fmt: skip
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--device", default="auto", show_default=True, help="auto | reference | webgpu")
@click.option("--json", "json_", is_flag=True, help="one JSON object at the end")
def command(ref, prompt, max_new, temperature, top_k, top_p, seed, store, device, json_):
    return generate_text(
        ref, prompt, max_new=max_new, temperature=temperature, top_k=top_k, top_p=top_p,
        seed=seed, store=store, device=device, json_=json_,
    )  # fmt: skip
