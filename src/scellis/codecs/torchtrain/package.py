"""``scellis export RECORD|RUN --to torch-train DIR`` (codecs layer): a PyTorch training package.

The folder holds everything a run needs and nothing of Scellis:

- ``model.py`` and ``state_dict.pt``: the plain module (``codecs.torch.source``) and its
  weights (the record's initial values, its stored weights, or a run's latest checkpoint);
- ``pipeline.py`` and ``optim.py``: Scellis' data connectors, Philox4x32, batch order,
  update scalars and schedules, copied as text (``sources``), plus the torch updates;
- ``train.py`` and ``ckpt.py``: the loop (one process, or ``torchrun`` with DDP/FSDP)
  and its checkpoint format, which ``scellis import`` reads back;
- ``config.json``: the record's pipeline resolved (every default filled in);
  ``record.sml``: the record itself; ``data/``: its data file;
- for a run: ``checkpoints/step-N.safetensors`` (its latest checkpoint in train.py's
  format, optimizer state included) and ``checkpoints/latest``, so train.py continues
  where the run stopped.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ...base.errors import ScellisError
from ...base.files import StagedOutput, check_destination, read_file
from ...catalog.registry import lookup
from ...catalog.sml_registry import with_derived_steps
from ...data.record import load_data, source_path
from ...data.text import TextDataset
from ...model.build import RecordModel, config_of
from ...sml import parse
from ...store import runfiles
from ...store.manifest import read_manifest
from ...store.objects import ObjectStore
from ...store.records import Records
from ...store.safetensors import dumps, loads
from ..convert import record_weights
from ..raw import RawTensor
from ..torch.pt import TorchCodec, TorchConfig
from ..torch.source import module_source
from .sources import SCHEDULER_CLASSES, optim_scalars_source, pipeline_source

FORMAT = "scellis.torch-train/1"
TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass
class RunState:
    """A run's checkpoint in train.py's terms: per-parameter optimizer buffers and JSON."""

    tensors: dict[str, tuple[str, tuple, bytes]]  # "optim.<name>.<buffer>" -> safetensors entry
    state: dict  # step, epoch, batch, optimizer, scheduler, loss_scale, metrics...


@dataclass
class Source:
    """What a package is made from: a record (text, parsed), its folder, its weights."""

    text: str
    record: dict
    base_dir: Path
    label: str
    tensors: dict[str, RawTensor]
    run: RunState | None = None
    files: dict = field(default_factory=dict)  # a run's kept data files: source -> sha256
    options: dict = field(default_factory=dict)  # a run's own options, train.py's defaults
    store: Path | None = None


def _kind(section: dict, prefix: str) -> str:
    bid = str(section.get("block_id", ""))
    if not bid.startswith(prefix):
        raise ScellisError(f"{bid!r} has no torch-train export")
    return bid[len(prefix) :]


def _config(section: dict, kind: str) -> dict:
    entry = lookup(section.get("block_id", ""), kind)
    cfg = dataclasses.asdict(config_of(entry, section, kind))
    return {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()}


def precision_of(spec) -> dict:
    """The record's precision with Scellis' defaults (the device check is train.py's)."""
    spec = {"policy": "f32"} if spec is None else spec
    spec = {"policy": spec} if isinstance(spec, str) else dict(spec)
    policy = spec.get("policy", "f32")
    if policy not in ("f32", "mixed_f16"):
        raise ScellisError(f"precision policy must be f32 or mixed_f16, got {policy!r}")
    scaling = spec.get("loss_scaling", "dynamic" if policy == "mixed_f16" else "none")
    static = isinstance(scaling, (int, float)) and not isinstance(scaling, bool)
    init = float(scaling) if static else float(spec.get("init_scale", 2.0**16))
    return {
        "policy": policy,
        "loss_scaling": "static" if static else scaling,
        "init_scale": 1.0 if scaling == "none" else init,
        "growth_factor": float(spec.get("growth_factor", 2.0)),
        "backoff_factor": float(spec.get("backoff_factor", 0.5)),
        "growth_interval": int(spec.get("growth_interval", 2000)),
    }


# the update formulas the package's optim.py carries (templates/optim_head.txt)
EXPORTED_OPTIMIZERS = ("sgd", "adam", "adamw", "rmsprop", "lion")


def package_config(record: dict, data: dict, digest: str, text_data: bool, label: str) -> dict:
    """``config.json``: the record's pipeline with every default resolved."""
    opt = record["optimizer"]
    if _kind(opt, "training/optimizer/") not in EXPORTED_OPTIMIZERS:
        raise ScellisError(
            f"optimizer {_kind(opt, 'training/optimizer/')!r} has no torch-train export yet"
        )
    if opt.get("groups"):
        raise ScellisError("optimizer groups have no torch-train export yet")
    sched = record.get("scheduler")
    scheduler = None
    if sched:
        name = _kind(sched, "training/scheduler/")
        if name not in SCHEDULER_CLASSES:
            raise ScellisError(f"scheduler {name!r} has no torch-train export yet")
        scheduler = {"class": SCHEDULER_CLASSES[name], "config": _config(sched, "scheduler")}
    inputs = list((record.get("inputs") or {}).values())
    if len(inputs) != 1:
        raise ScellisError("a torch-train export needs a model with one input")
    ev = record.get("eval") or {}
    watched = [ev.get("plateau_metric"), (ev.get("early_stopping") or {}).get("metric")]
    for metric in watched:
        if metric not in (None, "loss", "val_loss"):
            raise ScellisError(f"eval: {metric!r} is a metric train.py does not compute yet")
    return {
        "format": FORMAT,
        "model": record.get("model"),
        "label": label,
        "input_dtype": inputs[0].get("dtype", "f32"),
        "target_dtype": "i64" if text_data else "f32",
        "data": data,
        "dataset": digest,
        "optimizer": {
            "kind": _kind(opt, "training/optimizer/"),
            "hyper": _config(opt, "optimizer"),
        },
        "scheduler": scheduler,
        "loss": {
            "kind": _kind(record["loss"], "training/loss/"),
            "config": _config(record["loss"], "loss"),
        },
        "grad_clip": record.get("grad_clip"),
        "precision": precision_of(record.get("precision")),
        "epochs": int(record.get("epochs", 1)),
        "batch_size": int(record.get("batch_size", 32)),
        "eval_batch_size": int(ev.get("batch_size", 64)),
        "eval_split": ev.get("split", "val"),
        "plateau_metric": ev.get("plateau_metric"),
        "early_stopping": ev.get("early_stopping"),
        "seed": int(record.get("seed", 0) or 0),
        "weights": "state_dict.pt",
    }


def _data_file(src: Source, folder: Path) -> tuple[dict, Path]:
    """The record's data section pointing at the copy in ``folder`` (``bundled:NAME``)."""
    data = dict(src.record.get("data") or {})
    if not data:
        raise ScellisError(f"{src.label}: the record has no data section to train on")
    source = data.get("source")
    path = source_path(source, src.base_dir)
    if not path.is_file() and src.files and src.store is not None and source in src.files:
        objects = ObjectStore(src.store)
        path = runfiles.local_sources(objects, {source: src.files[source]}, folder / "_kept")[
            source
        ]
    if not path.is_file():
        raise ScellisError(f"data.source: {path} is not a file")
    data["source"] = f"bundled:{path.name}"
    return data, path


# what a package holds at its top, and its subfolders: an earlier export's are replaced
# only with --force, and none of them may be a link out of the folder
PACKAGE_FILES = ("model.py", "pipeline.py", "optim.py", "ckpt.py", "train.py", "record.sml",
                 "config.json", "state_dict.pt")  # fmt: skip
PACKAGE_FOLDERS = ("data", "checkpoints")


def check_package(dest, *, force: bool = False) -> None:
    """Refuse ``dest`` before any work: not a folder, a link inside it, or (without
    ``force``) an earlier package's file."""
    check_destination(dest, replace=force, folder=True, names=PACKAGE_FILES,
                      folders=PACKAGE_FOLDERS)  # fmt: skip


def write_package(dest, src: Source, *, force: bool = False) -> list[Path]:
    """Write the package for ``src`` into the folder ``dest``, staged beside it and moved
    into place once complete (``base.files.StagedOutput``: an earlier package's files are
    replaced only with ``force``, each whole); returns the files written."""
    check_package(dest, force=force)
    with StagedOutput(dest, replace=force) as stage:
        _write_package(stage.path, src)
    return stage.written


def _write_package(dest: Path, src: Source) -> None:
    record = src.record
    m = RecordModel(record, device="null")
    want = [k for k, _ in m.named_parameters()]
    missing = sorted(set(want) - set(src.tensors))
    if missing:
        raise ScellisError(f"the weights do not cover the record: missing {missing[:6]}")
    if record.get("finetune"):
        raise ScellisError("a record with a finetune section has no torch-train export yet")
    if (record.get("data") or {}).get("augment"):
        # train.py would have to mirror the jitter's Box-Muller bits in torch's own math
        raise ScellisError("data.augment has no torch-train export yet")
    dest.mkdir(parents=True, exist_ok=True)
    data, path = _data_file(src, dest)
    ds = load_data({**record["data"], "source": str(path)})
    (dest / "data").mkdir(exist_ok=True)
    shutil.copyfile(path, dest / "data" / path.name)
    shutil.rmtree(dest / "_kept", ignore_errors=True)  # in the staging folder: ours
    # a scheduler whose step count the record leaves out counts epochs x batches, as a run does
    per_epoch, rest = divmod(len(ds.x_train), int(record.get("batch_size", 32)))
    per_epoch += 1 if rest and not src.options.get("drop_last") else 0
    record = with_derived_steps(record, int(record.get("epochs", 1)) * per_epoch)
    cfg = package_config(record, data, ds.digest, isinstance(ds, TextDataset), src.label)
    every = (record.get("eval") or {}).get("every")  # the record's validation cadence
    cfg["options"] = {**({"eval_every": int(every)} if every else {}), **src.options}
    files = {
        "model.py": module_source(record, m.order, m.wiring),
        "pipeline.py": pipeline_source(),
        "optim.py": (TEMPLATES / "optim_head.txt").read_text() + "\n\n" + optim_scalars_source(),
        "ckpt.py": (TEMPLATES / "ckpt.txt").read_text(),
        "train.py": (TEMPLATES / "train.txt").read_text(),
        "record.sml": src.text,
        "config.json": json.dumps(cfg, indent=2) + "\n",
    }
    for name, text in files.items():
        (dest / name).write_text(text)  # the staging folder: moved into place when whole
    weights = dest / "state_dict.pt"
    TorchCodec(TorchConfig()).write(weights, {k: src.tensors[k] for k in want}, None)
    if src.run is not None:
        _write_run_checkpoint(dest / "checkpoints", src, want)


def _write_run_checkpoint(folder: Path, src: Source, names: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": _entry(src.tensors[k]) for k in names}
    tensors.update(src.run.tensors)
    state = {**src.run.state, "record": src.text, "label": src.label}
    path = folder / f"step-{state['step']:08d}.safetensors"
    path.write_bytes(dumps(tensors, {"format": FORMAT, "state": json.dumps(state)}))
    (folder / "latest").write_text(path.name + "\n")
    return path


def _entry(t: RawTensor) -> tuple[str, tuple, bytes]:
    return (t.dtype, tuple(t.shape), bytes(t.data))


# -- what a package is made from --


def record_source(path, store, weights: str | None) -> Source:
    """A record file: its stored weights (``# weights:`` or ``--weights``) or initial values."""
    path = Path(path)
    record, tensors = record_weights(path, store, weights)  # refuses a file that is no record
    text = read_file(path).decode("utf-8")
    return Source(text, record, path.parent, path.name, tensors)


def run_source(store, ref: str, manifest: str | None = None) -> Source:
    """Run ``ref`` of ``store``: its record and its checkpoint ``manifest`` (default: the
    latest), the optimizer state included."""
    root = Path(store)
    if not (root / "records.sqlite").exists():
        raise ScellisError(f"{ref}: not a file, and no store at {root} to find a run in")
    objects, records = ObjectStore(root), Records(root)
    try:
        rid = records.resolve(ref)
        row = records.run(rid)
        cks = records.checkpoints(rid)
    finally:
        records.close()
    if not cks:
        raise ScellisError(f"run {rid} has no checkpoint to export")
    config = row["config"] or {}
    text = objects.get(row["record_hash"]).decode("utf-8")
    record = parse(text.encode("utf-8"), config.get("label", "record.sml")).data
    if row.get("tier"):
        record = {**record, "determinism_tier": row["tier"]}
    m = read_manifest(objects, manifest or cks[-1]["manifest"])
    weights, _ = loads(objects.get(m["weights"]))
    tensors = {}
    for name, ref_ in m["weights_keys"].items():
        code, shape, view = weights[ref_["$tensor"]]
        tensors[name] = RawTensor(code, tuple(shape), bytes(view))
    opt, _ = loads(objects.get(m["optimizer_state"]))
    label = config.get("label", "record.sml")
    src = Source(text, record, Path(config.get("base_dir", ".")), label, tensors,
                 files=config.get("files") or {}, store=root,
                 options=run_options(config.get("options") or {}))  # fmt: skip
    src.run = _run_state(m, opt)
    src.run.state["optimizer"]["kind"] = _kind(record["optimizer"], "training/optimizer/")
    return src


# a run's options that train.py takes, by train.py's argument names
RUN_OPTIONS = ("log_every", "eval_every", "val_rows", "drop_last", "checkpoint_every",
               "checkpoint_minutes")  # fmt: skip


def run_options(stored: dict) -> dict:
    """train.py's defaults from a run's stored options (those it has, and set)."""
    out = {k: stored[k] for k in RUN_OPTIONS if stored.get(k) is not None}
    if stored.get("validate") is False:
        out["no_validate"] = True
    return out


def _f32(entry) -> float:
    code, _, view = entry
    fmt = {"F32": "<f", "F64": "<d", "F16": "<e"}[code]
    return float(struct.unpack(fmt, bytes(view))[0])


def _run_state(m: dict, opt: dict) -> RunState:
    """A Scellis checkpoint manifest in train.py's terms (flat buffers cut per parameter)."""
    tree = m["optimizer"]
    groups = tree["param_groups"]
    if len(groups) != 1:
        raise ScellisError("a run with several parameter groups has no torch-train export yet")
    g = groups[0]
    tensors = {}
    steps = {name: int(step) for name, step in zip(g["names"], g["steps"])}
    for buf, ref in g["state"].items():
        code, _, view = opt[ref["$tensor"]]
        raw, at = bytes(view), 0
        size = 4 if code == "F32" else 8
        for name, shape in zip(g["names"], g["shapes"]):
            n = 1
            for s in shape:
                n *= s
            tensors[f"optim.{name}.{buf}"] = (code, tuple(shape), raw[at : at + n * size])
            at += n * size
    options = {k: v for k, v in g.items() if k not in ("names", "shapes", "steps", "state")}
    scale = m.get("loss_scale") or {}
    loss_scale = {
        k: (_f32(opt[v["$tensor"]]) if isinstance(v, dict) else v) for k, v in scale.items()
    }
    keys = ("loss", "val_loss", "skipped_total")
    metrics = {k: m["metrics"][k] for k in keys if k in m["metrics"]}
    state = {
        "step": m["step"], "epoch": m["epoch"], "batch": m["batch"], "seed": m["seed"],
        "optimizer": {"kind": None, "options": options, "step_count": tree["step_count"],
                      "steps": steps},
        "scheduler": m.get("scheduler"), "loss_scale": loss_scale, "metrics": metrics,
        "early_stopping": m.get("early_stopping") or {},
        "dataset": m.get("dataset"),
    }  # fmt: skip
    return RunState(tensors, state)


def export_package(file, dest, *, store=".scellis", weights: str | None = None,
                   force: bool = False) -> list[Path]:  # fmt: skip
    """``FILE`` (a record, or a run id in ``store``) as a torch-train package in ``dest``;
    an earlier package's files are replaced only with ``force``."""
    check_package(dest, force=force)  # before the record or the run is read
    path = Path(file)
    if path.is_file():
        src = record_source(path, store, weights)
    else:
        if weights is not None:
            raise ScellisError("--weights goes with a record file, not a run")
        src = run_source(store, str(file))
    return write_package(dest, src, force=force)
