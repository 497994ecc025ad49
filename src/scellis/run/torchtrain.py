"""A train.py checkpoint as a Scellis run (run layer): ``scellis import CKPT --store DIR``.

The way back from ``export --to torch-train``: the checkpoint's record, weights,
optimizer state (per-parameter buffers gathered into Scellis' flat group buffers, in
the optimizer's parameter order, with each parameter's step count), scheduler step,
loss scale, counters (step, epoch, batch) and metrics become a checkpoint manifest of a
new run in the store, whose status is ``interrupted``; ``scellis resume RUN`` continues
it with the next batch of the same Philox order. The data file is the package's copy
(``data/`` beside ``checkpoints/``), kept with the run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from pathlib import Path

from ..base.errors import ScellisError, shown
from ..base.files import is_within
from ..catalog.registry import lookup
from ..codecs.torchtrain.checkpoint import read_checkpoint
from ..data.record import load_data, source_path
from ..model.build import RecordModel, config_of
from ..sml import parse
from ..store import runfiles
from ..store.manifest import write_manifest
from ..store.objects import ObjectStore
from ..store.records import Records, new_run_id
from ..store.safetensors import dumps
from ..train.checkpoint import DTYPE_CODES, state_dict_of
from ..train.determinism import resolve_tier
from ..train.state import VERSION
from .options import RunOptions
from .prepare import check_record, prepare_run

_BUFFER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclasses.dataclass
class ImportedRun:
    run: str
    step: int
    epoch: int
    manifest: str


def _data_path(record: dict, package: Path, base_dir: Path | None) -> tuple[dict, Path | None]:
    """The record's data file: under ``base_dir`` when given, else the package's copy.
    The record came with the checkpoint, so its ``data.source`` is only a name to look
    for there: a path that leads out of that folder (``/etc/passwd``, ``../..``, a
    symlink) is never read."""
    data = record.get("data") or {}
    source = data.get("source")
    if not isinstance(source, str) or source.startswith("bundled:"):
        return {}, None
    path = None
    if base_dir is not None:
        path = source_path(source, base_dir)
        if not is_within(path, base_dir):
            raise ScellisError(
                f"data.source {shown(source, 60)}: the checkpoint's record names a file "
                f"outside --base-dir {base_dir}; it is not read"
            )
    if path is None or not path.is_file():
        folder = package / "data"
        path = folder / Path(source.replace("\\", "/")).name
        if path.name in ("", ".", "..") or not is_within(path, folder):
            raise ScellisError(
                f"data.source {shown(source, 60)}: not a file of the package's data folder"
            )
    if not path.is_file():
        raise ScellisError(f"data.source {shown(source, 60)}: no such file (give --base-dir)")
    return {source: path}, path


def _checked_options(record: dict, saved: dict, where: str) -> dict:
    """The record's optimizer options with the checkpoint's values in their place: only
    options the record's optimizer has, each of the kind it declares."""
    sec = record["optimizer"]
    entry = lookup(sec["block_id"], "optimizer")
    opts = dataclasses.asdict(config_of(entry, sec, "optimizer"))
    for k, v in saved.items():
        if k not in opts and k != "initial_lr":
            raise ScellisError(f"{where}: optimizer option {k!r} is not one of {entry.id}'s")
        want = opts.get(k, 0.0)
        same = (isinstance(v, bool) == isinstance(want, bool)) and (
            isinstance(v, list) == isinstance(want, (list, tuple))
        )
        if isinstance(want, (list, tuple)) and same:
            same = len(v) == len(want)
        if want is not None and not same:
            raise ScellisError(f"{where}: optimizer option {k!r} is not a {type(want).__name__}")
        opts[k] = v
    fields = {k: v for k, v in opts.items() if k != "initial_lr"}
    config_of(entry, {**sec, **fields}, f"{where}: optimizer")  # the optimizer's own checks
    return {k: list(v) if isinstance(v, tuple) else v for k, v in opts.items()}


def _optimizer_tree(record: dict, model, ck, opt_blob: dict) -> dict:
    """Scellis' optimizer state dict (flat buffers as ``$tensor`` leaves into ``opt_blob``):
    every buffer present for every trained parameter, of its shape, in f32."""
    where = str(ck.path.name)
    saved = ck.state["optimizer"]
    opts = _checked_options(record, saved["options"], where)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    names = {n for n, _ in named}
    bufs = sorted({key.rpartition(".")[2] for key in ck.optim})
    for key in ck.optim:
        name, _, buf = key.rpartition(".")
        if name not in names or not _BUFFER.match(buf):
            raise ScellisError(f"{where}: optimizer tensor {key!r:.80} is of no trained parameter")
    state = {}
    for buf in bufs:
        parts = []
        for name, p in named:
            t = ck.optim.get(f"{name}.{buf}")
            if t is None:
                raise ScellisError(f"{where}: the optimizer state lacks {name}.{buf}")
            if t.dtype != "F32" or tuple(t.shape) != tuple(p.shape):
                raise ScellisError(
                    f"{where}: {name}.{buf} is {t.dtype}{list(t.shape)}, not F32{list(p.shape)}"
                )
            parts.append(t.data)
        key = f"optimizer.param_groups.0.state.{buf}"
        opt_blob[key] = ("F32", (sum(p.numel for _, p in named),), b"".join(parts))
        state[buf] = {"$tensor": key}
    steps = saved["steps"]
    stray = set(steps) - names
    if stray:
        raise ScellisError(f"{where}: optimizer.steps names no parameter {sorted(stray)[0]!r:.80}")
    if any(v > saved["step_count"] for v in steps.values()):
        raise ScellisError(f"{where}: a parameter's step count is past optimizer.step_count")
    group = {
        **opts,
        "names": [n for n, _ in named],
        "shapes": [list(p.shape) for _, p in named],
        "steps": [steps.get(n, 0) for n, _ in named],
        "state": state,
    }
    return {"step_count": saved["step_count"], "param_groups": [group]}


def _weights(model, ck) -> dict:
    """The checkpoint's weights, each of the name, shape and dtype the record's model has."""
    want = dict(model.live_state())
    if set(want) != set(ck.model):
        raise ScellisError(
            f"{ck.path.name}: the weights do not match the record (missing "
            f"{sorted(set(want) - set(ck.model))[:4]}, unexpected "
            f"{sorted(set(ck.model) - set(want))[:4]})"[:300]
        )
    out = {}
    for k, t in ck.model.items():
        shape, code = tuple(want[k].shape), DTYPE_CODES[want[k].dtype.name]
        if tuple(t.shape) != shape or t.dtype != code:
            raise ScellisError(
                f"{ck.path.name}: weight {k} is {t.dtype}{list(t.shape)}, the record's model "
                f"has {code}{list(shape)}"
            )
        out[k] = (t.dtype, shape, t.data)
    return out


def _trial_load(record: dict, ds, where: Path, objects: ObjectStore, m_hash: str, path) -> None:
    """Load the new checkpoint as ``scellis resume`` will (on the reference device), so
    a state that would fail there is refused now, before a run names it."""
    try:
        prep = prepare_run(record, "reference", dataset=ds, base_dir=where)
        sd, _ = state_dict_of(objects, m_hash, prep.device)
        prep.ts.load_state_dict(sd)
    except ScellisError as e:
        raise ScellisError(f"{Path(path).name}: the checkpoint does not load ({e})"[:300]) from None
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, ArithmeticError) as e:
        msg = f"{Path(path).name}: the checkpoint does not load ({type(e).__name__}: {e})"
        raise ScellisError(shown(msg, 300)) from None


def import_checkpoint(path, store, *, device: str = "webgpu", base_dir=None,
                      argv=("(python)",)) -> ImportedRun:  # fmt: skip
    """Record the train.py checkpoint ``path`` as a new run in ``store`` (see the module).
    Everything is checked, and the checkpoint trial-loaded, before the run's rows are
    written, in one transaction: a refused checkpoint leaves no run behind."""
    ck = read_checkpoint(path)
    st = ck.state
    package = Path(path).resolve().parent.parent
    text = st["record"]
    label = st["label"]
    files, data_file = _data_path(parse(text.encode("utf-8"), label).data, package, base_dir)
    where = data_file.parent if data_file is not None else package
    record = check_record(text.encode("utf-8"), label, base_dir=where)
    local = record
    if data_file is not None:
        local = runfiles.with_local_data(record, {record["data"]["source"]: data_file})
    ds = load_data(local["data"], base_dir=where)
    if st["dataset"] and st["dataset"] != ds.digest:
        raise ScellisError(
            f"{path}: trained on data {st['dataset'][:12]}, the data here hashes to "
            f"{ds.digest[:12]}"
        )
    model = RecordModel(record, device="null")
    weights = _weights(model, ck)
    opt_blob: dict = {}
    optimizer = _optimizer_tree(record, model, ck, opt_blob)
    scale = st["loss_scale"]
    loss_scale = {"scale": scale.get("scale", 1.0), "good": scale.get("good", 0.0)}
    seed, step, epoch, batch = st["seed"], st["step"], st["epoch"], st["batch"]
    tier = resolve_tier(record.get("determinism_tier")).name
    metrics = {k: v for k, v in st["metrics"].items() if v is not None}
    root = Path(store)
    objects = ObjectStore(root)
    # the objects first (content-addressed: a refused import leaves only unnamed objects,
    # which ``runs gc`` removes), then the rows, all in one transaction
    record_hash = objects.put(text.encode("utf-8"))
    w_hash = objects.put(dumps(weights, {"format": "scellis"}))
    o_hash = objects.put(dumps(opt_blob, {"format": "scellis"}))
    manifest = {
        "version": VERSION, "weights": w_hash,
        "weights_keys": {k: {"$tensor": k} for k in weights},
        "optimizer_state": o_hash, "optimizer": optimizer, "loss_scale": loss_scale,
        "scheduler": st["scheduler"],
        "rng_state": {
            name: {"algorithm": "philox4x32", "seed": seed, "name": name,
                   "counter": {"step": at, "draw": 0}}
            for name, at in (("shuffle", epoch), ("dropout", step))
        },
        "seed": seed, "epoch": epoch, "step": step, "batch": batch,
        "early_stopping": st["early_stopping"],
        "metrics": {"skipped_total": 0, **metrics},
        "record": record_hash, "dataset": ds.digest, "tier": tier,
        "device": "torch", "adapter": "torch-train", "imported_from": Path(path).name,
    }  # fmt: skip
    m_hash = write_manifest(objects, manifest)
    _trial_load(local, ds, where, objects, m_hash, path)
    config: dict = {"options": RunOptions().to_config(), "label": label,
                    "base_dir": str(where)}  # fmt: skip
    if files:
        config["files"] = runfiles.keep(objects, files)
    rows = _rows(
        dict(record_hash=record_hash, model_id=record.get("model"), dataset_hash=ds.digest,
             device=device, adapter=device, tier=tier, seed=seed, argv=list(argv),
             config=config),
        ds, str(record["data"].get("source")), step, epoch, batch, m_hash, metrics,
    )  # fmt: skip
    records = Records(root)
    try:
        records.add_rows(rows)
    finally:
        records.close()
    return ImportedRun(rows["run"]["id"], step, epoch, m_hash)


def _rows(run: dict, ds, source: str, step, epoch, batch, m_hash, metrics) -> dict:
    """The new run's rows (``Records.rows_of``'s shape), interrupted at its checkpoint."""
    now = time.time()
    rid = new_run_id(now)
    loss = metrics.get("val_loss", metrics.get("loss"))
    return {
        "run": {
            "id": rid, **run, "argv": json.dumps(run["argv"]),
            "config": json.dumps(run["config"], sort_keys=True), "status": "interrupted",
            "started": now, "ended": now, "heartbeat": now, "step": step,
        },
        "checkpoints": [{"run_id": rid, "step": step, "epoch": epoch, "batch": batch,
                         "manifest": m_hash, "loss": _finite(loss), "created": now}],
        "metrics": [{"run_id": rid, "step": step, "epoch": epoch, "name": k,
                     "value": _finite(metrics[k])}
                    for k in ("loss", "val_loss") if metrics.get(k) is not None],
        "datasets": [{"hash": ds.digest, "source": source,
                      "rows": len(ds.x_train) + len(ds.x_val), "created": now}],
    }  # fmt: skip


def _finite(v):
    return v if v is None or math.isfinite(v) else None
