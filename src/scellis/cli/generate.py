"""``scellis generate RUN --prompt TEXT`` (cli layer): continue a text with a trained LM.

``RUN`` is a run reference (``RUN``, ``RUN@STEP``, ``RUN:best``: ``run.reference``) of a
language model trained on text; the prompt is encoded with that text's character
vocabulary and continued by ``run.generate`` (temperature, top-k, top-p, a Philox
seed; the key/value cache while the text fits the context). The continuation is
printed as it is generated; ``--json`` prints one object at the end instead.
"""

from __future__ import annotations

import json
import sys

import click

from ..base.interrupt import run_until_done
from ..run.generate import text_run
from ..run.reference import open_run
from .common import extensions_option, load_cli_extensions, pick_device


def generate_text(ref, prompt, *, max_new=200, temperature=1.0, top_k=None, top_p=None,
                  seed=0, store=".scellis", device="auto", json_=False,
                  out=None) -> int:  # fmt: skip
    """Print the continuation of ``prompt`` by the run ``ref``; returns the exit status."""
    out = out or sys.stdout
    name, _ = pick_device(device)
    lm = text_run(open_run(store, ref), name)
    lm.encode(prompt)  # a bad prompt is refused before anything is printed
    kw = dict(max_new=max_new, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)

    async def go() -> list[int]:
        got: list[int] = []
        async for i, piece in lm.pieces(prompt, **kw):
            got.append(i)
            if not json_:
                out.write(piece)
                out.flush()
        return got

    got = run_until_done(go())
    if json_:
        text = lm.decoded(prompt, got)
        row = {"run": lm.run.ref, "device": name, "prompt": prompt, "generated": text,
               "ids": got, **kw, "context": lm.context}  # fmt: skip
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
@extensions_option
def command(ref, prompt, max_new, temperature, top_k, top_p, seed, store, device, json_,
            extensions):  # fmt: skip
    load_cli_extensions(extensions)
    return generate_text(
        ref, prompt, max_new=max_new, temperature=temperature, top_k=top_k, top_p=top_p,
        seed=seed, store=store, device=device, json_=json_,
    )  # fmt: skip
