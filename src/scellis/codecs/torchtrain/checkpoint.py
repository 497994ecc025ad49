"""train.py's checkpoints read without torch (codecs layer), every field checked.

A checkpoint is one safetensors file (see the package's ``ckpt.py``): tensors
``model.<name>`` and ``optim.<name>.<buffer>``, metadata ``format`` =
``scellis.torch-train/1`` and ``state`` (JSON: step, epoch, batch, seed, optimizer
options and step counts, scheduler, loss scale, metrics, the record's text).

A checkpoint is something users share, so ``read_checkpoint`` trusts none of it: the
state is parsed with bounded nesting and digits, and ``check_state`` gives every field
the type and range that a later resume or evaluation reads it as (a step that is text
or 1e30, NaN metrics, a negative batch, options that are not numbers) before a single
object is written; the tensors' shapes and dtypes are checked against the record by
the importer (``run.torchtrain``), which knows the model.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError, shown
from ...base.files import read_file
from ...base.jsontext import load_json
from ...store.safetensors import loads
from ..raw import RawTensor

FORMAT = "scellis.torch-train/1"
MAX_COUNT = 2**53  # counters stay exact as JSON numbers (and as floats in torch)
MAX_RECORD = 1_000_000  # the SML loader's own limit on a record's text
MAX_ENTRIES = 10_000  # names in one map of the state (parameters, metrics, options)
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}$")
_HASH = re.compile(r"[0-9a-f]{64}$")
# what train.py writes; anything else is not a state it made
_KEYS = {"step", "epoch", "batch", "seed", "optimizer", "scheduler", "loss_scale", "metrics",
         "early_stopping", "dataset", "record", "label", "world", "fsdp"}  # fmt: skip
_REQUIRED = ("step", "epoch", "batch", "seed", "optimizer", "record")


@dataclass
class TrainCheckpoint:
    model: dict[str, RawTensor]
    optim: dict[str, RawTensor]  # "<parameter>.<buffer>" -> tensor
    state: dict
    path: Path


def is_train_checkpoint(path) -> bool:
    """True for a train.py checkpoint (a safetensors file whose metadata says so)."""
    try:  # read_file: a FIFO or a device given here is never opened blocking
        head = read_file(path, head=8)
        if len(head) < 8:
            return False
        (n,) = struct.unpack("<Q", head)
        if n > 1 << 26:
            return False
        header = load_json(read_file(path, head=8 + n)[8:], str(path))
    except ScellisError:
        return False  # not this format: the codec that reads it says why
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def read_checkpoint(path) -> TrainCheckpoint:
    path = Path(path)
    tensors, meta = loads(read_file(path))
    if meta.get("format") != FORMAT:
        raise ScellisError(f"{path}: not a train.py checkpoint ({FORMAT})")
    if "state" not in meta:
        raise ScellisError(f"{path}: the checkpoint has no state")
    state = check_state(load_json(meta["state"], f"{path.name}: state"), f"{path.name}: state")
    model, optim = {}, {}
    for name, (code, shape, view) in tensors.items():
        t = RawTensor(code, tuple(shape), bytes(view))
        if name.startswith("model."):
            model[name[len("model.") :]] = t
        elif name.startswith("optim."):
            optim[name[len("optim.") :]] = t
        else:
            raise ScellisError(f"{path}: tensor {shown(name, 60)!r} is neither model. nor optim.")
    return TrainCheckpoint(model, optim, state, path)


class _Bad(ScellisError):
    pass


def _fail(where: str, key: str, what: str, value) -> _Bad:
    got = type(value).__name__ if isinstance(value, (dict, list)) else shown(repr(value), 40)
    return _Bad(f"{where}: {key} must be {what}, got {got}")


def count(value, where: str, key: str, low: int = 0) -> int:
    """``value`` as a whole number in [low, 2**53]; text, floats, bools and NaN refused."""
    if type(value) is not int or not low <= value <= MAX_COUNT:
        raise _fail(where, key, f"a whole number from {low} to 2**53", value)
    return value


def number(value, where: str, key: str, *, finite: bool = True):
    """``value`` as a number (an int or a float; finite unless told)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, key, "a number", value)
    if finite and not math.isfinite(value):
        raise _fail(where, key, "a finite number", value)
    return value


def mapping(value, where: str, key: str, *, optional: bool = False) -> dict:
    """``value`` as a JSON object with at most MAX_ENTRIES plain names as keys."""
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise _fail(where, key, "an object", value)
    if len(value) > MAX_ENTRIES:
        raise _Bad(f"{where}: {key} has {len(value)} entries; the limit is {MAX_ENTRIES}")
    for k in value:
        if not _NAME.match(k):
            raise _Bad(f"{where}: {key} has an entry named {shown(k, 40)!r}")
    return value


def _option(value, where: str, key: str):
    """An optimizer option: true/false, a finite number, or a short list of numbers."""
    if isinstance(value, list):
        if len(value) > 16:
            raise _fail(where, key, "at most 16 numbers", value)
        return [number(v, where, key) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    return number(value, where, key)


def _optimizer(value, where: str) -> dict:
    opt = mapping(value, where, "optimizer")
    unknown = set(opt) - {"kind", "options", "step_count", "steps"}
    if unknown:
        raise _Bad(f"{where}: optimizer has unknown entries {sorted(unknown)[:3]}")
    for k in ("options", "step_count", "steps"):
        if k not in opt:
            raise _Bad(f"{where}: the optimizer state lacks {k}")
    kind = opt.get("kind")
    if kind is not None and not (isinstance(kind, str) and _NAME.match(kind)):
        raise _fail(where, "optimizer.kind", "a name", kind)
    options = mapping(opt["options"], where, "optimizer.options")
    return {
        "kind": kind,
        "options": {k: _option(v, where, f"optimizer.options.{k}") for k, v in options.items()},
        "step_count": count(opt["step_count"], where, "optimizer.step_count"),
        "steps": {k: count(v, where, f"optimizer.steps.{k}")
                  for k, v in mapping(opt["steps"], where, "optimizer.steps").items()},
    }  # fmt: skip


def _numbers(value, where: str, key: str, *, finite: bool) -> dict:
    """A map of names to numbers (or null): metrics, loss scale, early-stopping counters."""
    out = {}
    for k, v in mapping(value, where, key, optional=True).items():
        out[k] = None if v is None else number(v, where, f"{key}.{k}", finite=finite)
    return out


def _scheduler(value, where: str):
    """A scheduler's state: counters and rates (lists of finite numbers); the scheduler
    itself checks that they are its own when the run is trial-loaded."""
    if value is None:
        return None
    sched = mapping(value, where, "scheduler")
    for k, v in sched.items():
        if k in ("last_epoch", "num_bad_epochs", "cooldown_counter"):
            count(v, where, f"scheduler.{k}", low=-1)
        elif isinstance(v, list):
            if len(v) > MAX_ENTRIES:
                raise _fail(where, f"scheduler.{k}", f"at most {MAX_ENTRIES} numbers", v)
            for x in v:
                number(x, where, f"scheduler.{k}")
        elif v is not None:
            number(v, where, f"scheduler.{k}", finite=k != "best")  # best starts at inf
    return sched


def _text(value, where: str, key: str, limit: int) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise _fail(where, key, f"text of at most {limit} characters", value)
    return value


def check_state(state, where: str) -> dict:
    """train.py's state, each field of the type and range a resume reads; a ScellisError
    (one line, naming the field) for the first that is not."""
    state = dict(mapping(state, where, "the state"))
    unknown = set(state) - _KEYS
    if unknown:
        raise _Bad(f"{where}: unknown entries {sorted(unknown)[:3]}")
    missing = [k for k in _REQUIRED if k not in state]
    if missing:
        raise _Bad(f"{where}: lacks {', '.join(missing)}")
    out = {k: count(state[k], where, k) for k in ("step", "epoch", "batch", "seed")}
    out["optimizer"] = _optimizer(state["optimizer"], where)
    if out["optimizer"]["step_count"] > out["step"]:
        raise _Bad(f"{where}: optimizer.step_count is past step {out['step']}")
    out["scheduler"] = _scheduler(state.get("scheduler"), where)
    scale = _numbers(state.get("loss_scale"), where, "loss_scale", finite=True)
    if set(scale) - {"scale", "good"} or (scale.get("scale") is not None and scale["scale"] <= 0):
        raise _Bad(f"{where}: loss_scale must be {{scale > 0, good}}")
    out["loss_scale"] = scale
    # a diverged run's loss may be inf or NaN: kept as the number it was
    out["metrics"] = _numbers(state.get("metrics"), where, "metrics", finite=False)
    out["early_stopping"] = _numbers(state.get("early_stopping"), where, "early_stopping",
                                     finite=False)  # fmt: skip
    dataset = state.get("dataset")
    if dataset is not None and not (isinstance(dataset, str) and _HASH.match(dataset)):
        raise _fail(where, "dataset", "a sha256 hash", dataset)
    out["dataset"] = dataset
    out["record"] = _text(state["record"], where, "record", MAX_RECORD)
    label = _text(state.get("label") or "record.sml", where, "label", 4096)
    # the label names the record in messages: a long path is shortened to its name
    out["label"] = label if len(label) <= 120 else (Path(label).name[-120:] or "record.sml")
    return out
