"""A trained run's weights, one reference away (run layer): ``RUN``, ``RUN@STEP``, ``RUN:best``.

``RUN`` is a run id (or a unique prefix of one) in a store; ``@STEP`` picks the
checkpoint at that step, ``:best`` the one with the best score (the validation loss
when the run evaluated, else the training loss), ``:last`` (the default) the latest.
``open_run`` reads the record the run trained and the checkpoint's manifest;
``TrainedRun.model(device)`` builds that record's model with those weights (its
fine-tuning adapters included), ready for evaluation, prediction or generation;
``TrainedRun.dataset()`` loads the run's data, from the run's kept copy of its file
(once: the copy is content-addressed, so every later call gets the same dataset).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ScellisError, shown
from ..codecs.pretrained import pretrained_model
from ..data.record import data_format, load_data
from ..devices.base import get_device
from ..store import runfiles
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train import checkpoint as ckpt
from ..train.state import write_weights
from .prepare import check_record

_REF = re.compile(r"(?P<run>[A-Za-z0-9_.-]+?)(?:@(?P<step>[0-9]+)|:(?P<pick>best|last))?")
MAX_REF = 128  # a run id is 22 characters; room for a step and a pick
MAX_STEP_DIGITS = 18  # a step count fits 63 bits with room to spare


@dataclass
class TrainedRun:
    """A run's record and one of its checkpoints (see the module note)."""

    root: Path
    rid: str
    step: int
    manifest: str
    record_text: bytes
    record: dict
    config: dict
    label: str
    _own_data: object = field(default=None, init=False, repr=False, compare=False)

    @property
    def ref(self) -> str:
        return f"{self.rid}@{self.step}"

    def model(self, device="reference"):
        """The record's model on ``device`` with this checkpoint's weights, in eval mode."""
        dev = get_device(device)
        model = pretrained_model(self.record, device=dev)
        sd, _ = ckpt.state_dict_of(ObjectStore(self.root), self.manifest, dev)
        try:
            write_weights(model, sd["model"])
        except ScellisError as e:
            msg = f"run {self.rid}: its checkpoint does not fit its record ({e})"
            raise ScellisError(msg) from None
        model.eval()
        return model

    def data_record(self, source: str | Path | None = None) -> tuple[dict, Path]:
        """(data section, folder its paths are relative to): the run's own data from its
        kept copy, or ``source`` (another file with the same columns) in its place."""
        data = dict(self.record.get("data") or {})
        if not data:
            raise ScellisError(f"run {self.rid}: its record has no data section")
        if source is not None:
            data.pop("sha256", None)  # another file: another version of the data
            data["source"] = str(Path(source).resolve())
            return data, Path.cwd()
        files = self.config.get("files") or {}
        missing = runfiles.unkept(self.record, files)
        if missing:
            raise ScellisError(
                f"run {self.rid} keeps no copy of its data file {shown(missing[0], 60)}, and "
                "a stored run's paths are not read: give the data with --data FILE"
            )
        objects = ObjectStore(self.root)
        folder = self.root / "files" / self.rid
        record = runfiles.with_local_data(
            self.record, runfiles.local_sources(objects, files, folder)
        )
        local = dict(record["data"])
        # a copy read from its object has no suffix: the format the original's told
        if Path(str(local.get("source"))).suffix != Path(str(data.get("source"))).suffix:
            local.setdefault("format", data_format(data, str(data.get("source"))))
        return local, folder

    def dataset(self, source: str | Path | None = None):
        if source is None and self._own_data is not None:
            return self._own_data
        data, base = self.data_record(source)
        ds = load_data(data, base_dir=base)
        if source is None:
            self._own_data = ds
        return ds


def parse_ref(ref: str) -> tuple[str, int | None, str]:
    """(run, step or None, best|last) of ``RUN``, ``RUN@STEP`` or ``RUN:best``."""
    ref = ref if isinstance(ref, str) else ""
    m = _REF.fullmatch(ref) if len(ref) <= MAX_REF else None
    if m is None:
        raise ScellisError(f"{shown(ref, 60)!r} is not a run reference like RUN, RUN@120 or "
                           "RUN:best")  # fmt: skip
    step = m.group("step")
    if step is not None and len(step) > MAX_STEP_DIGITS:
        raise ScellisError(f"run reference step {shown(step, 24)}... has more than "
                           f"{MAX_STEP_DIGITS} digits")  # fmt: skip
    return m.group("run"), int(step) if step is not None else None, m.group("pick") or "last"


def open_run(store, ref: str) -> TrainedRun:
    """The run ``ref`` names in ``store`` (see the module note)."""
    root = Path(store)
    run, step, pick = parse_ref(ref)
    if not (root / "records.sqlite").is_file():
        raise ScellisError(f"no store at {root} to find run {ref!r} in (--store DIR)")
    records = Records(root, readonly=True)
    try:
        rid = records.resolve(run)
        row = records.run(rid)
        cks = records.checkpoints(rid)
    finally:
        records.close()
    if not cks:
        raise ScellisError(f"run {rid} has no checkpoint yet: nothing trained to use")
    c = _pick(rid, cks, step, pick)
    text = ObjectStore(root).get(row["record_hash"])
    config = row["config"] or {}
    label = config.get("label", "record.sml")
    record = check_record(text, label, base_dir=config.get("base_dir", "."))
    return TrainedRun(root, rid, c["step"], c["manifest"], text, record, config, label)


def _pick(rid: str, cks: list[dict], step: int | None, pick: str) -> dict:
    if step is not None:
        for c in cks:
            if c["step"] == step:
                return c
        have = ", ".join(str(c["step"]) for c in cks)
        raise ScellisError(f"run {rid} has no checkpoint at step {step} (it has: {have})")
    if pick == "best":
        scored = [c for c in cks if c["loss"] is not None]
        return min(scored, key=lambda c: (c["loss"], -c["step"])) if scored else cks[-1]
    return cks[-1]


def looks_like_run(store, ref: str) -> bool:
    """True when ``ref`` is no file here and names a run of ``store``."""
    if _exists(ref) or not _exists(Path(store) / "records.sqlite"):
        return False
    try:
        run, _, _ = parse_ref(ref)
        records = Records(Path(store), readonly=True)
    except ScellisError:
        return False
    try:
        records.resolve(run)
        return True
    except ScellisError:
        return False
    finally:
        records.close()


def _exists(path) -> bool:
    """Whether ``path`` names anything; a name the system cannot even look up (too
    long, a NUL byte) names nothing."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False
