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
    try:  # 63-bit numbers (the counters are SQLite integers), bounded nesting
        m = _unfinite(load_json(data, f"object {h}", max_digits=19))
    except (ScellisError, ValueError, TypeError):
        raise ScellisError(f"object {h} is not a checkpoint manifest") from None
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
    return m


_HEX = frozenset("0123456789abcdef")


def objects_of(m: dict) -> set[str]:
    """The objects a manifest keeps alive."""
    return {m[k] for k in OBJECT_KEYS if m.get(k)}
