"""Generation benchmark: tokens per second with the key/value cache vs whole-window steps.

Usage::

    PYTHONPATH=src python3 bench/generate.py                        # reference and webgpu
    PYTHONPATH=src python3 bench/generate.py --devices reference --new 256 --out gen.json

The model is the char-transformer example (d_model 64, 4 heads, 2 decoder blocks,
vocabulary 88, learned positions) with its context widened to prompt + new tokens, so
the text never slides and the cache serves every step; weights are its seeded init
(timing does not depend on training). Each device generates ``--new`` tokens greedily
from one random prompt twice: with the cache (the prompt once, then one token a step)
and with ``cache=False`` (the whole text so far at every step, what a model without a
cache does). A short warm-up run first compiles the pipelines. Reported: wall seconds
of each, ms per token, the speed-up, and whether both chose the same tokens (and the
largest logit difference between them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from pathlib import Path

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from scellis.base.rng import Generator  # noqa: E402
from scellis.devices import get_device  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402
from scellis.model.build import RecordModel  # noqa: E402
from scellis.run.generate import stream  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def widened(context: int) -> dict:
    record = load_record(str(ROOT / "examples" / "char_transformer.sml"))
    record["inputs"]["ids"]["shape"] = ["batch", context]
    record["blocks"]["pos"]["max_len"] = context
    return record


async def run(model, prompt, dev, new: int, cache: bool):
    ids, logits = [], []
    t0 = time.perf_counter()
    async for s in stream(model, prompt, max_new=new, temperature=0, device=dev,
                          context=len(prompt[0]) + new, cache=cache, keep_logits=True):  # fmt: skip
        ids.append(s.ids)
        logits.append(s.logits)
    return time.perf_counter() - t0, ids, logits


def bench(device: str, prompt_len: int, new: int, batch: int) -> dict:
    dev = get_device(device)
    model = RecordModel(widened(prompt_len + new), device=dev, gen=Generator(0, "init")).eval()
    rng = random.Random(0)
    prompt = [[rng.randrange(88) for _ in range(prompt_len)] for _ in range(batch)]
    for cache in (True, False):  # warm-up: pipelines compiled, pools filled
        asyncio.run(run(model, prompt, dev, 4, cache))
    t_cache, ids_c, lc = asyncio.run(run(model, prompt, dev, new, True))
    t_full, ids_f, lf = asyncio.run(run(model, prompt, dev, new, False))
    diff = max(
        abs(a - b) for sc_, sf in zip(lc, lf) for rc, rf in zip(sc_, sf) for a, b in zip(rc, rf)
    )
    return {
        "device": device,
        "adapter": getattr(getattr(dev, "info", None), "name", "") or dev.name,
        "prompt": prompt_len,
        "new": new,
        "batch": batch,
        "cached_s": round(t_cache, 3),
        "full_s": round(t_full, 3),
        "cached_ms_per_token": round(1000 * t_cache / new, 2),
        "full_ms_per_token": round(1000 * t_full / new, 2),
        "speedup": round(t_full / t_cache, 2),
        "same_tokens": ids_c == ids_f,
        "max_logit_diff": diff,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="reference,webgpu")
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    for d in args.devices.split(","):
        row = bench(d, args.prompt, args.new, args.batch)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
