"""Checkpoint manifests (store layer): one canonical JSON object over safetensors objects.

A manifest names its tensor objects by hash (``weights``, ``optimizer_state``) and
carries everything else a run needs to continue as plain JSON: ``rng_state``
(``{stream: {algorithm: philox4x32, seed, counter}}``), ``epoch``, ``step``, ``batch``,
``metrics``, ``scheduler``, ``loss_scale``, ``early_stopping``, the model record's and
the dataset's hashes and the determinism tier. It is itself an object, written last:
a checkpoint exists once its manifest does, so a crash while writing the tensor
objects leaves the previous checkpoint as the latest one.
"""

from __future__ import annotations

import json
import math

from ..base.errors import ScellisError
from ..base.jsontext import load_json
from .objects import ObjectStore

FORMAT = "scellis.checkpoint/1"
REQUIRED = (
    "format", "weights", "optimizer_state", "rng_state", "epoch", "step", "batch",
    "metrics", "record", "dataset", "tier",
)  # fmt: skip
OBJECT_KEYS = ("weights", "optimizer_state", "record")


def _finite(obj):
    """JSON has no NaN/inf: non-finite floats are written as strings and read back."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"$float": repr(obj)}
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _unfinite(obj):
    if isinstance(obj, dict):
        if set(obj) == {"$float"}:
            return float(obj["$float"])
        return {k: _unfinite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unfinite(v) for v in obj]
    return obj


def canonical(obj) -> bytes:
    """Sorted keys, compact, UTF-8: equal content gives equal bytes (and hash)."""
    return json.dumps(_finite(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")  # fmt: skip


def write_manifest(objects: ObjectStore, manifest: dict) -> str:
    missing = [k for k in REQUIRED if k not in manifest and k != "format"]
    if missing:
        raise ScellisError(f"checkpoint manifest lacks {missing}")
    for k in OBJECT_KEYS:
        if manifest.get(k) and not objects.has(manifest[k]):
            raise ScellisError(f"checkpoint manifest names {k} object {manifest[k]}, not stored")
    return objects.put(canonical({"format": FORMAT, **manifest}))


def read_manifest(objects: ObjectStore, h: str) -> dict:
    return parse_manifest(objects.get(h), h)


def parse_manifest(data: bytes, h: str) -> dict:
    """The manifest in ``data`` (object ``h``), checked: its format, the keys a resume
    reads, the objects it names as sha256 hashes and its counters as whole numbers."""
    try:
        m = _unfinite(load_json(data, f"object {h[:12]}", max_digits=19))
    except (ScellisError, ValueError, TypeError):
        raise ScellisError(f"object {h[:12]} is not a checkpoint manifest") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise ScellisError(f"object {h} is not a {FORMAT} manifest")
    missing = [k for k in REQUIRED if k not in m]
    if missing:
        raise ScellisError(f"checkpoint manifest {h[:12]} lacks {missing}")
    for k in OBJECT_KEYS:
        v = m.get(k)
        if v and not (isinstance(v, str) and len(v) == 64 and all(c in _HEX for c in v)):
            raise ScellisError(f"checkpoint manifest {h[:12]}: {k} is not an object hash")
    for k in ("epoch", "step", "batch"):
        if type(m[k]) is not int or m[k] < 0:
            raise ScellisError(f"checkpoint manifest {h[:12]}: {k} is not a whole number")
    problem = _state_problem(m)
    if problem:
        raise ScellisError(f"checkpoint manifest {h[:12]}: {problem}")
    return m


# -- the state a resume or an evaluation reads, each entry of the type it reads it as --


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _count(v) -> bool:
    return type(v) is int and v >= 0


def _tensor_or_num(v) -> bool:
    return v is None or _num(v) or (isinstance(v, dict) and isinstance(v.get("$tensor"), str))


def _flat(v) -> bool:
    """A value a state map may hold: a number, true/false, null, text or a list of them."""
    if isinstance(v, list):
        return len(v) <= 100_000 and all(x is None or isinstance(x, (int, float, str)) for x in v)
    return v is None or isinstance(v, (int, float, str))


def _group_problem(g) -> str | None:
    if not isinstance(g, dict):
        return "an optimizer parameter group is not an object"
    names, shapes, steps = g.get("names"), g.get("shapes"), g.get("steps")
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        return "an optimizer group's names are not a list of names"
    if not (isinstance(shapes, list) and len(shapes) == len(names) and all(
            isinstance(s, list) and all(_count(d) for d in s) for s in shapes)):  # fmt: skip
        return "an optimizer group's shapes are not one list of sizes per parameter"
    if not (isinstance(steps, list) and len(steps) == len(names) and all(map(_count, steps))):
        return "an optimizer group's steps are not one whole number per parameter"
    state = g.get("state")
    if not (isinstance(state, dict) and all(_tensor_or_num(v) and v is not None
                                            for v in state.values())):  # fmt: skip
        return "an optimizer group's state is not a map of tensors"
    if not all(_flat(v) for k, v in g.items() if k not in ("names", "shapes", "steps", "state")):
        return "an optimizer option is not a number, a name or a list of them"
    return None


def _state_problem(m: dict) -> str | None:
    """What in ``m``'s state a resume would trip over, or None."""
    if not _count(m.get("seed", 0)):
        return "seed is not a whole number"
    rng = m["rng_state"]
    if not isinstance(rng, dict) or not all(
        isinstance(r, dict) and _count(r.get("seed")) and isinstance(r.get("name"), str)
        and isinstance(r.get("counter"), dict) and _count(r["counter"].get("step"))
        and _count(r["counter"].get("draw")) for r in rng.values()
    ):  # fmt: skip
        return "rng_state is not a map of Philox streams"
    metrics = m["metrics"]
    if not isinstance(metrics, dict) or not all(v is None or _num(v) for v in metrics.values()):
        return "metrics are not a map of numbers"
    for k in ("early_stopping", "scheduler"):
        v = m.get(k)
        if v is not None and not (isinstance(v, dict) and all(map(_flat, v.values()))):
            return f"{k} is not a map of numbers"
    scale = m.get("loss_scale")
    if scale is not None and not (isinstance(scale, dict)
                                  and all(map(_tensor_or_num, scale.values()))):  # fmt: skip
        return "loss_scale is not a map of numbers"
    opt = m.get("optimizer")
    if opt is None:
        return None
    if not isinstance(opt, dict) or not _count(opt.get("step_count")):
        return "optimizer is not an optimizer state (step_count, param_groups)"
    groups = opt.get("param_groups")
    if not isinstance(groups, list):
        return "optimizer.param_groups is not a list"
    return next(filter(None, map(_group_problem, groups)), None)


_HEX = frozenset("0123456789abcdef")


def objects_of(m: dict) -> set[str]:
    """The objects a manifest keeps alive."""
    return {m[k] for k in OBJECT_KEYS if m.get(k)}
