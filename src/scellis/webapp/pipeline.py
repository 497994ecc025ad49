"""A record's training pipeline, assembled (webapp layer): model, data, loss, optimizer.

What ``scellis train`` does between validating a record and calling ``fit``, written
once for the tab: parse and validate the SML text (problems raise a ``Diagnostic``
with its line:col), build the record's model on a device, load its data (or a dataset
the data panel handed over), and build the optimizer, loss and scheduler entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.errors import Diagnostic, ScellisError
from ..base.rng import Generator
from ..catalog.registry import lookup
from ..catalog.sml_registry import catalog_registry
from ..data.record import load_data
from ..devices.base import get_device
from ..model.build import RecordModel, config_of
from ..sml import parse, validate
from ..train import Batches


class RecordProblems(Diagnostic):
    """Every located problem of a record; the first is the message, all are listed."""

    def __init__(self, problems: list[Diagnostic]):
        first = problems[0]
        super().__init__(first.message, first.file, first.line, first.col, first.fix)
        self.problems = problems


def check_record(text: str, name: str = "record.sml") -> dict:
    """The parsed record of ``text``; RecordProblems (line:col) when it is not valid."""
    try:
        doc = parse(text.encode("utf-8"), name)
        problems = validate(doc, catalog_registry())
    except Diagnostic as d:
        problems = [d]
    if problems:
        raise RecordProblems(problems)
    return doc.data


def _entry_obj(section: dict, kind: str, *args):
    entry = lookup(section.get("block_id", ""), kind)
    cfg = config_of(entry, section, kind)
    return entry.impl(*args, config=cfg) if args else entry.impl(config=cfg)


@dataclass
class Pipeline:
    record: dict
    device: Any
    model: Any
    dataset: Any
    train: Batches
    val: Batches
    optimizer: Any
    loss: Any
    scheduler: Any
    epochs: int
    seed: int
    tier: str | None

    def fit_kwargs(self, validate: bool = True) -> dict:
        r = self.record
        return dict(
            epochs=self.epochs,
            determinism_tier=self.tier,
            seed=self.seed,
            scheduler=self.scheduler,
            val_data=self.val if validate else None,
            grad_clip=r.get("grad_clip"),
            precision=r.get("precision"),
        )


def build_pipeline(
    record: dict,
    device: str = "webgpu",
    dataset=None,
    epochs: int | None = None,
    base_dir=".",
    drop_last: bool = False,
) -> Pipeline:
    """The objects ``fit`` needs for ``record`` on ``device``. ``dataset`` (a loaded
    dataset) replaces the record's own data section; ``drop_last`` drops each epoch's
    short last batch (every step then has one shape: no new kernels to compile)."""
    dev = get_device(device)
    seed = int(record.get("seed", 0) or 0)
    model = RecordModel(record, device=dev, gen=Generator(seed, "init"))
    if dataset is None:
        if "data" not in record:
            raise ScellisError("the record has no data section to train on; load a dataset")
        dataset = load_data(record["data"], base_dir=base_dir)
    batch = int(record.get("batch_size", 32))
    optimizer = _entry_obj(record["optimizer"], "optimizer", model)
    loss = _entry_obj(record["loss"], "loss")
    scheduler = None
    if record.get("scheduler"):
        scheduler = _entry_obj(record["scheduler"], "scheduler", optimizer)
    ev_cfg = record.get("eval") or {}
    val_batch = int(ev_cfg.get("batch_size", 64))
    return Pipeline(
        record=record,
        device=dev,
        model=model,
        dataset=dataset,
        train=Batches(dataset.x_train, dataset.y_train, batch, drop_last=drop_last, device=dev),
        val=Batches(dataset.x_val, dataset.y_val, val_batch, shuffle=False, device=dev),
        optimizer=optimizer,
        loss=loss,
        scheduler=scheduler,
        epochs=int(epochs if epochs is not None else record.get("epochs", 1)),
        seed=seed,
        tier=record.get("determinism_tier"),
    )
