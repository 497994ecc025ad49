"""A run's live pieces from its record (run layer): what a run session trains.

``check_record`` parses and validates a record's text (every located problem in one
``RecordProblems``). ``prepare_run`` builds, on a device, the record's model (with
pre-trained weights loaded and its ``finetune`` section applied, when it has them),
its data (or a dataset the caller loaded), the optimizer, loss and scheduler, the
batches and the ``TrainState``. Callers plan first (``run.planning.plan_run``), so
a red plan refuses before anything is allocated on the device. What is the caller's
own stays with it: the CLI's terminal output and argv, the tab's events and samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.errors import Diagnostic, ScellisError
from ..catalog.extensions import load_record_extensions
from ..catalog.sml_registry import catalog_registry, with_derived_steps
from ..codecs.pretrained import pretrained_model
from ..data.record import load_data
from ..data.text import TextDataset
from ..devices.base import get_device
from ..ir.compiled import forward_for
from ..model.build import entry_object
from ..model.param_groups import optimizer_of
from ..sml import parse, validate
from ..train.augment import Augment
from ..train.data import Batches
from ..train.determinism import resolve_tier
from ..train.evaluation import MetricSet
from ..train.fit import fit_loop
from ..train.fit_config import FitConfig
from ..train.state import TrainState
from .checks import param_group_problems
from .planning import eval_batch_of


class RecordProblems(Diagnostic):
    """Every located problem of a record; the first is the message, all are listed."""

    def __init__(self, problems: list[Diagnostic]):
        first = problems[0]
        super().__init__(first.message, first.file, first.line, first.col, first.fix)
        self.problems = problems

    def listing(self, limit: int = 20) -> str:
        """The problems one a line, the first ``limit`` of them: a record of ten thousand
        bad groups says so in a screenful."""
        lines = [str(d) for d in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"... and {len(self.problems) - limit} more problems")
        return "\n".join(lines)


def check_record(text: str | bytes, name: str = "record.sml", *, base_dir=".",
                 trusted: bool = False) -> dict:  # fmt: skip
    """The parsed record of ``text``; RecordProblems (line:col) when it is not valid.
    A ``trusted`` record (a file the user runs) loads the extensions its
    ``extensions:`` section names first (relative to ``base_dir``, its folder), so the
    entries they register validate; any other record naming extensions is refused."""
    raw = text.encode("utf-8") if isinstance(text, str) else text
    try:
        doc = parse(raw, name)
        problems = load_record_extensions(doc, base_dir, trusted=trusted)
        problems = problems or validate(doc, catalog_registry())
        problems = problems or param_group_problems(doc)
    except Diagnostic as d:
        problems = [d]
    if problems:
        raise RecordProblems(problems)
    return doc.data


@dataclass
class Prepared:
    """A record's run, built and ready for ``fit`` (see the module note)."""

    record: dict
    device: Any
    ts: TrainState
    loss: Any
    dataset: Any  # the loaded dataset: windows, splits, its digest
    train: Batches
    val: Batches
    epochs: int
    tier: str  # the determinism tier's name, as runs and checkpoints record it
    label: str = "record.sml"
    why: str = ""  # how the device was chosen, when it was picked for the caller
    metrics: MetricSet | None = None  # the record's eval.metrics, for this dataset
    augment: Augment | None = None  # the record's data.augment
    # steps as a recorded dispatch schedule: None where the device can, False never
    replay: bool | None = None
    eval_every: int | None = None  # the record's eval.every

    @property
    def model(self):
        return self.ts.model

    @property
    def optimizer(self):
        return self.ts.optimizer

    @property
    def scheduler(self):
        return self.ts.scheduler

    @property
    def seed(self) -> int:
        return self.ts.seed

    @property
    def digest(self) -> str | None:
        """The dataset's content hash (None for a dataset that has none)."""
        return getattr(self.dataset, "digest", None)

    @property
    def rows(self) -> int:
        return len(self.dataset.x_train) + len(self.dataset.x_val)

    def set_tier(self, tier: str | None) -> None:
        """Run under ``tier`` instead of the record's determinism tier."""
        self.tier = resolve_tier(tier).name

    def fit_config(self, *, max_steps: int | None = None, log_every: int = 10,
                   validate: bool = True, eval_every: int | None = None) -> FitConfig:  # fmt: skip
        """How ``fit`` trains this run: the record's options (tier, seed, clipping,
        precision, metrics, early stopping, augmentation) with the run's own."""
        validate = validate and self.val is not None
        ev = self.record.get("eval") or {}
        return FitConfig(
            epochs=self.epochs,
            determinism_tier=self.tier,
            seed=self.seed,
            val_data=self.val if validate else None,
            eval_every=eval_every if validate else None,
            log_every=log_every,
            grad_clip=self.record.get("grad_clip"),
            precision=self.record.get("precision"),
            early_stopping=ev.get("early_stopping"),
            plateau_metric=ev.get("plateau_metric"),
            max_steps=max_steps,
            replay=self.replay,
            metrics=self.metrics,
            forward=forward_for(self.record, self.model, self.tier),
            augment=self.augment,
        )

    async def fit(
        self,
        *,
        max_steps: int | None = None,
        log_every: int = 10,
        validate: bool = True,
        eval_every: int | None = None,
        should_stop=None,
    ):
        """``fit_loop``'s event stream for this run, continuing ``ts``: evaluation on
        ``val`` (every ``eval_every`` steps, else at each epoch's end) unless not
        ``validate``. Bad options raise when the stream is first iterated, inside the
        caller's handling of the run's errors."""
        config = self.fit_config(max_steps=max_steps, log_every=log_every, validate=validate,
                                 eval_every=eval_every)  # fmt: skip
        events = fit_loop(
            self.model, self.loss, self.optimizer, self.train, config,
            scheduler=self.scheduler, state=self.ts, should_stop=should_stop,
        )  # fmt: skip
        try:
            async for ev in events:
                yield ev
        finally:
            await events.aclose()

    def limit_validation(self, rows: int | None) -> None:
        """Validate on the first ``rows`` validation rows only (None: all of them)."""
        if rows is None or self.val is None:
            return
        v = self.val
        self.val = Batches(v.x[:rows], v.y[:rows], v.batch_size, shuffle=False,
                           device=self.device)  # fmt: skip


def prepare_run(
    record: dict,
    device="webgpu",
    *,
    dataset=None,
    base_dir=".",
    epochs: int | None = None,
    weights=None,
    drop_last: bool = False,
    label: str = "record.sml",
) -> Prepared:
    """The pieces ``fit`` needs for ``record`` on ``device`` (a name or an opened one).

    ``dataset`` (loaded by the caller) replaces the record's own data section, whose
    paths are relative to ``base_dir``; ``epochs`` replaces the record's; ``weights``
    (e.g. ``codecs.convert.header_weights``) are loaded into the model before its
    fine-tuning; ``drop_last`` drops each epoch's short last batch (every step then has
    one shape: no new kernels to compile)."""
    dev = get_device(device)
    seed = int(record.get("seed", 0) or 0)
    model = pretrained_model(record, weights, device=dev)
    if dataset is None:
        if "data" not in record:
            raise ScellisError(f"{label}: the record has no data section to train on")
        dataset = load_data(record["data"], base_dir=base_dir)
    optimizer = optimizer_of(record["optimizer"], model)
    loss = entry_object(record["loss"], "loss")
    batch = int(record.get("batch_size", 32))
    train = Batches(dataset.x_train, dataset.y_train, batch, drop_last=drop_last, device=dev)
    n_epochs = int(epochs if epochs is not None else record.get("epochs", 1))
    record = with_derived_steps(record, n_epochs * len(train))
    scheduler = None
    if record.get("scheduler"):
        scheduler = entry_object(record["scheduler"], "scheduler", optimizer)
    ev = record.get("eval") or {}
    # eval.split: which windows validation reads (the validation split by default)
    vx, vy = (dataset.x_train, dataset.y_train) if ev.get("split") == "train" else (
        dataset.x_val, dataset.y_val)  # fmt: skip
    return Prepared(
        record=record,
        device=dev,
        ts=TrainState(model, optimizer, scheduler, seed=seed),
        loss=loss,
        dataset=dataset,
        train=train,
        val=Batches(vx, vy, eval_batch_of(record), shuffle=False, device=dev),
        epochs=n_epochs,
        tier=resolve_tier(record.get("determinism_tier")).name,
        label=label,
        metrics=metric_set(ev.get("metrics") or [], dataset, ev.get("split") or "val"),
        augment=augment_of(record, dataset),
        eval_every=ev.get("every"),
    )


def augment_of(record: dict, dataset) -> Augment | None:
    """The record's ``data.augment`` for ``dataset``: numeric windows only (jitter on a
    text model's token ids would change which tokens it reads)."""
    aug = Augment.of((record.get("data") or {}).get("augment"))
    if aug is not None and isinstance(dataset, TextDataset):
        raise ScellisError("data.augment applies to numeric windows, not to text data")
    return aug


def metric_set(specs: list, dataset, split: str = "val") -> MetricSet | None:
    """The record's ``eval.metrics`` for ``dataset``: forecasts are scored in the data's
    own units (each window by its own frame in a per-window mode; ``split`` says which
    windows validation reads), text models on their classes."""
    if not specs:
        return None
    if isinstance(dataset, TextDataset):
        return MetricSet(specs, task="classification")
    frames = getattr(dataset, "train_frames" if split == "train" else "val_frames", None)

    def to_units(rows, first=0):
        if frames is None:
            return _in_units(dataset, rows, None)
        return [_in_units(dataset, r, frames[first + i]) for i, r in enumerate(rows)]

    return MetricSet(specs, task="regression", to_units=to_units)


def _in_units(dataset, rows, frame, step: int = 0):
    """``rows`` (one window's outputs, or one of them: step ``step``) in the data's units."""
    if isinstance(rows, list):
        return [_in_units(dataset, r, frame, k) for k, r in enumerate(rows)]
    if frame is None:
        return dataset.denormalise(rows)
    return dataset.denormalise(rows, frame=frame, step=step)
