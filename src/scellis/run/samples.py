"""Evaluation samples of a run (run layer): forecast vs actual, or generated text.

Both run on one training-sized batch of validation windows, so they reuse the kernels
the training steps compiled (a software GPU pays seconds for every new shape).
"""

from __future__ import annotations

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..data.text import TextDataset
from ..runtime.creation import tensor
from ..train.events import Sample
from .generate import generate


async def sample(pipe, chars: int = 40, stop=None) -> Sample:
    """A sample of ``pipe`` (a ``run.prepare.Prepared``): text for a text dataset, a
    forecast otherwise; ``chars`` is the length of a generated text, cut short once
    ``stop()`` is true (a run's Stop never waits for a long text)."""
    if isinstance(pipe.dataset, TextDataset):
        return await text_sample(pipe, chars, stop)
    return await series_sample(pipe)


async def series_sample(pipe) -> Sample:
    ds = pipe.dataset
    x = ds.x_val[: pipe.train.batch_size]
    n = len(x)
    with no_grad():
        pipe.model.eval()
        pred = pipe.model(tensor(x, device=pipe.device))
        pipe.model.train()
    values = await pred.read()
    flat = values if not values or not isinstance(values[0], list) else [r[0] for r in values]
    actual = [row[0] if isinstance(row, list) else row for row in ds.y_val[:n]]
    frames = getattr(ds, "val_frames", None) or [None] * n  # a per-window mode's own frames
    return Sample(
        type="forecast",
        predicted=[_units(ds, v, f) for v, f in zip(flat, frames)],
        actual=[_units(ds, v, f) for v, f in zip(actual, frames)],
        starts=ds.val_starts[:n],
    )


def _units(ds, v: float, frame) -> float:
    return ds.denormalise(v) if frame is None else ds.denormalise(v, frame=frame)


async def text_sample(pipe, chars: int = 40, stop=None) -> Sample:
    """Greedy continuations of the first validation windows, one row per prompt, from
    the generator (``run.generate``). Each prompt fills the context, so every step runs
    the whole window, slid by one character (one shape)."""
    ds: TextDataset = pipe.dataset
    windows = [list(w) for w in ds.x_val[: pipe.train.batch_size]]
    if not windows:
        raise ScellisError("the text has no validation window to start a sample from")
    outs = await generate(
        pipe.model, windows, max_new=chars, temperature=0,
        device=pipe.device, context=len(windows[0]), stop=stop,
    )  # fmt: skip
    rows = [
        {"prompt": ds.vocab.decode(p), "generated": ds.vocab.decode(o)}
        for p, o in zip(ds.x_val, outs)
    ]
    return Sample(type="text", greedy=True, prompt=rows[0]["prompt"],
                  generated=rows[0]["generated"], rows=rows)  # fmt: skip
