"""``scellis.train_record`` and ``scellis.load`` (run layer): a record trained from
Python, and a saved file or a trained run ready to use.

``load("weights.safetensors")`` reads what ``scellis.save`` wrote. ``load("RUN")``
(``RUN@STEP``, ``RUN:best``; ``store=`` the folder) gives a ``TrainedModel``: the
run's model with its checkpoint's weights, callable like the model, with
``evaluate``, ``predict`` and ``forecast`` in the data's own units, and ``generate``
for a language model (``run.generate``). These helpers drive the engine's async calls
with ``asyncio.run`` (Ctrl-C stops them at once), so they are for native Python; in a
tab, await ``run.use``'s functions instead.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..base.errors import ScellisError
from ..base.files import read_file
from ..base.interrupt import run_until_done
from ..codecs import state_file
from .generate import text_run
from .options import RunOptions
from .reference import TrainedRun, open_run
from .session import start_run
from .use import evaluate_run, predict_run


class TrainedModel:
    """A trained run's model and what to do with it (see the module note)."""

    def __init__(self, run: TrainedRun, device="reference"):
        self.run, self.device = run, device
        self.model = run.model(device)

    def __call__(self, *inputs):
        return self.model(*inputs)

    def __repr__(self) -> str:
        return f"TrainedModel({self.run.ref}, {self.run.record.get('model')}, {self.device})"

    def evaluate(self, data=None) -> dict:
        """Metrics beside baselines on the validation split or on ``data`` (a CSV)."""
        return run_until_done(evaluate_run(self.run, data=data, device=self.device))

    def predict(self, data=None) -> list[dict]:
        """``{date, actual, predicted, horizon}`` over the whole series."""
        return run_until_done(predict_run(self.run, data=data, device=self.device))

    def forecast(self, horizon: int, data=None) -> list[dict]:
        """The ``horizon`` recursive steps past the series' end."""
        if horizon < 1:
            raise ScellisError(f"forecast: horizon must be >= 1, got {horizon}")
        rows = run_until_done(predict_run(self.run, data=data, horizon=horizon, device=self.device))
        return [r for r in rows if r["actual"] is None]

    def generate(self, prompt: str, max_new: int = 200, temperature: float = 1.0,
                 top_k: int | None = None, top_p: float | None = None,
                 seed: int = 0) -> str:  # fmt: skip
        """The continuation of ``prompt`` by a language model's run (``run.generate``:
        greedy at temperature 0, else sampled from the Philox ``sample`` stream of ``seed``)."""
        lm = text_run(self.run, self.device, self.model)
        kw = dict(max_new=max_new, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        return run_until_done(lm.text(prompt, **kw))


def load(ref, device=None, store=".scellis", *, map_location=None, weights_only=None,
         mmap=None, **pickle_load_args):  # fmt: skip
    """A file (a name or a file object) saved with ``scellis.save``, or the trained run
    ``ref`` names in ``store``.

    torch's ``map_location`` names the device (a name, a ``device``, or ``"cpu"`` for
    the reference device; a function or mapping keeps the default); ``weights_only`` is
    taken as it is: these files hold tensors and plain values only, never code."""
    if device is None and isinstance(map_location, str):
        device = map_location
    elif device is None and hasattr(map_location, "type") and not callable(map_location):
        device = str(map_location.type)
    if hasattr(ref, "read"):  # a file object (io.BytesIO), as torch.load takes
        return state_file.load(ref, device=device)
    path = Path(ref) if isinstance(ref, (str, Path)) else None
    if path is not None and path.is_file():
        return state_file.load(path, device=device)
    if not isinstance(ref, str):
        raise ScellisError(f"load: {ref!r} is neither a file nor a run reference")
    if not (Path(store) / "records.sqlite").is_file():
        raise ScellisError(f"load: no file {ref!r}, and no store at {store} to find a run in")
    return TrainedModel(open_run(store, ref), device or "reference")


def train_record(record, *, store=".scellis", device="reference", **options) -> dict:
    """Train the record at path ``record`` like ``scellis train`` does (recorded in
    ``store``; ``options`` are run options: ``max_steps=60``, ``lr=3e-4``,
    ``set=["data.window=52"]`` ...); returns the end summary, with the run's id."""
    path = Path(record)
    raw = read_file(path)
    opts = RunOptions.from_mapping(options, where="train")
    session = start_run(raw, str(path), options=opts, device=device, base_dir=path.parent,
                        store=store, trusted=True)  # fmt: skip

    async def drive():
        end = None
        async for ev in session.events():
            end = ev if ev.kind == "end" else end
        return end

    return asyncio.run(drive()).to_dict()
