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
from pathlib import Path

from ..base.errors import ScellisError, shown
from ..base.files import inside
from ..catalog.registry import lookup
from ..codecs.torchtrain.checkpoint import read_checkpoint
from ..data.record import load_data, source_path
from ..model.build import RecordModel, config_of
from ..sml import parse
from ..store import runfiles
from ..store.manifest import write_manifest
from ..store.objects import ObjectStore
from ..store.records import Records
from ..store.safetensors import dumps
from ..train.determinism import resolve_tier
from ..train.state import VERSION
from .options import RunOptions
from .prepare import check_record


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
        if not inside(path, base_dir):
            raise ScellisError(
                f"data.source {shown(source, 60)}: the checkpoint's record names a file "
                f"outside --base-dir {base_dir}; it is not read"
            )
    if path is None or not path.is_file():
        folder = package / "data"
        path = folder / Path(source.replace("\\", "/")).name
        if path.name in ("", ".", "..") or not inside(path, folder):
            raise ScellisError(
                f"data.source {shown(source, 60)}: not a file of the package's data folder"
            )
    if not path.is_file():
        raise ScellisError(f"data.source {shown(source, 60)}: no such file (give --base-dir)")
    return {source: path}, path


def _optimizer_tree(record: dict, model, ck, opt_blob: dict) -> dict:
    """Scellis' optimizer state dict (flat buffers as ``$tensor`` leaves into ``opt_blob``)."""
    sec = record["optimizer"]
    opts = dataclasses.asdict(config_of(lookup(sec["block_id"], "optimizer"), sec, "optimizer"))
    saved = ck.state["optimizer"]
    for k, v in (saved.get("options") or {}).items():
        if k in opts or k == "initial_lr":
            opts[k] = v
    opts = {k: list(v) if isinstance(v, tuple) else v for k, v in opts.items()}
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    bufs = sorted({key.rpartition(".")[2] for key in ck.optim})
    state = {}
    for buf in bufs:
        parts = []
        for name, p in named:
            t = ck.optim.get(f"{name}.{buf}")
            if t is None:
                parts.append(bytes(4 * p.numel))
                continue
            if t.dtype != "F32" or tuple(t.shape) != tuple(p.shape):
                raise ScellisError(f"{ck.path}: {name}.{buf} is {t.dtype}{list(t.shape)}")
            parts.append(t.data)
        key = f"optimizer.param_groups.0.state.{buf}"
        opt_blob[key] = ("F32", (sum(p.numel for _, p in named),), b"".join(parts))
        state[buf] = {"$tensor": key}
    steps = saved.get("steps") or {}
    group = {
        **opts,
        "names": [n for n, _ in named],
        "shapes": [list(p.shape) for _, p in named],
        "steps": [int(steps.get(n, 0)) for n, _ in named],
        "state": state,
    }
    return {"step_count": int(saved.get("step_count", 0)), "param_groups": [group]}


def import_checkpoint(path, store, *, device: str = "webgpu", base_dir=None,
                      argv=("(python)",)) -> ImportedRun:  # fmt: skip
    """Record the train.py checkpoint ``path`` as a new run in ``store`` (see the module)."""
    ck = read_checkpoint(path)
    st = ck.state
    package = Path(path).resolve().parent.parent
    text = st["record"]
    label = st.get("label") or "record.sml"
    files, data_file = _data_path(parse(text.encode("utf-8"), label).data, package, base_dir)
    where = data_file.parent if data_file is not None else package
    record = check_record(text.encode("utf-8"), label, base_dir=where)
    local = record
    if data_file is not None:
        local = runfiles.with_local_data(record, {record["data"]["source"]: data_file})
    ds = load_data(local["data"], base_dir=where)
    if st.get("dataset") and st["dataset"] != ds.digest:
        raise ScellisError(
            f"{path}: trained on data {st['dataset'][:12]}, the data here hashes to "
            f"{ds.digest[:12]}"
        )
    model = RecordModel(record, device="null")
    want = dict(model.live_state())
    if set(want) != set(ck.model):
        raise ScellisError(
            f"{path}: the weights do not match the record (missing "
            f"{sorted(set(want) - set(ck.model))[:4]}, unexpected "
            f"{sorted(set(ck.model) - set(want))[:4]})"
        )
    weights = {k: (t.dtype, tuple(t.shape), t.data) for k, t in ck.model.items()}
    opt_blob: dict = {}
    optimizer = _optimizer_tree(record, model, ck, opt_blob)
    scale = st.get("loss_scale") or {}
    loss_scale = {"scale": scale.get("scale", 1.0), "good": scale.get("good", 0.0)}
    seed, step, epoch = int(st["seed"]), int(st["step"]), int(st["epoch"])
    tier = resolve_tier(record.get("determinism_tier")).name
    root = Path(store)
    objects, records = ObjectStore(root), Records(root)
    try:
        record_hash = objects.put(text.encode("utf-8"))
        w_hash = objects.put(dumps(weights, {"format": "scellis"}))
        o_hash = objects.put(dumps(opt_blob, {"format": "scellis"}))
        metrics = {k: v for k, v in (st.get("metrics") or {}).items() if v is not None}
        manifest = {
            "version": VERSION, "weights": w_hash,
            "weights_keys": {k: {"$tensor": k} for k in weights},
            "optimizer_state": o_hash, "optimizer": optimizer, "loss_scale": loss_scale,
            "scheduler": st.get("scheduler"),
            "rng_state": {
                name: {"algorithm": "philox4x32", "seed": seed, "name": name,
                       "counter": {"step": at, "draw": 0}}
                for name, at in (("shuffle", epoch), ("dropout", step))
            },
            "seed": seed, "epoch": epoch, "step": step, "batch": int(st["batch"]),
            "early_stopping": st.get("early_stopping") or {},
            "metrics": {"skipped_total": 0, **metrics},
            "record": record_hash, "dataset": ds.digest, "tier": tier,
            "device": "torch", "adapter": "torch-train", "imported_from": Path(path).name,
        }  # fmt: skip
        m_hash = write_manifest(objects, manifest)
        records.add_dataset(ds.digest, str(record["data"].get("source")),
                            len(ds.x_train) + len(ds.x_val))  # fmt: skip
        config: dict = {"options": RunOptions().to_config(), "label": label,
                        "base_dir": str(where)}  # fmt: skip
        if files:
            config["files"] = runfiles.keep(objects, files)
        rid = records.new_run(
            record_hash=record_hash, model_id=record.get("model"), dataset_hash=ds.digest,
            device=device, adapter=device, tier=tier, seed=seed, argv=list(argv), config=config,
        )  # fmt: skip
        for k in ("loss", "val_loss"):
            if metrics.get(k) is not None:
                records.log(rid, step, epoch, {k: metrics[k]})
        records.add_checkpoint(rid, step, epoch, int(st["batch"]), m_hash,
                               metrics.get("val_loss", metrics.get("loss")))  # fmt: skip
        records.finish(rid, "interrupted")
    finally:
        records.close()
    return ImportedRun(rid, step, epoch, m_hash)
