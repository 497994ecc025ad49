"""The record's own schema (sml layer): sections, the model id, inputs, the pipeline.

These checks need no catalog: they read a Document and return Diagnostics, each at
the offending node. Catalog-backed checks (block ids, fields, shapes) are in validate.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass

from .document import NAME, Document

MODEL_ID = re.compile(r"[a-z0-9][a-z0-9_.-]*(/[a-z0-9][a-z0-9_.-]*)+@[0-9]+$")
TIERS = ("debug", "prod", "fast")
DTYPES = ("f32", "f16", "i32", "u32", "bool")
SECTIONS = {
    "model", "inputs", "blocks", "outputs", "optimizer", "scheduler", "loss", "epochs",
    "batch_size", "grad_clip", "precision", "determinism_tier", "seed", "data", "eval",
    "finetune", "activation_checkpointing", "extensions",
}  # fmt: skip
REMAT = "activation_checkpointing"  # record-wide default, or per block next to block_id/in
MAX_INT = 2**63 - 1  # what the records store (SQLite INTEGER); seeds and counts fit in it


@dataclass(frozen=True)
class Num:
    """A finite number in a range: ``low``/``high`` bounds, ``open`` on either side."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def problem(self, k: str, v) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"{k} must be a number, got {v!r}"
        return finite(k, v) or _bounds(k, v, self.low, self.high, self.low_open, self.high_open)


def finite(k: str, v) -> str | None:
    """Why ``v`` is no usable number (NaN, an infinity, or too large for a float)."""
    try:
        ok = math.isfinite(float(v))
    except OverflowError:
        ok = False
    return None if ok else f"{k} must be a finite number, got {v!r:.40}"


def _bounds(k: str, v, low, high, low_open=False, high_open=False) -> str | None:
    if low is not None and (v <= low if low_open else v < low):
        return f"{k} must be {'>' if low_open else '>='} {low:g}, got {v!r}"
    if high is not None and (v >= high if high_open else v > high):
        return f"{k} must be {'<' if high_open else '<='} {high:g}, got {v!r}"
    return None


PRECISION = {
    "policy": ("f32", "mixed_f16"),
    "master_weights": ("f32",),
    "loss_scaling": ("dynamic", "static", "none"),
    "fallback": ("f32", "refuse"),
    "init_scale": Num(0, low_open=True), "growth_factor": Num(1),
    "backoff_factor": Num(0, 1, low_open=True, high_open=True),
    "growth_interval": int,
}  # fmt: skip
DATA = {
    "source": str, "format": ("csv", "text"), "column": str,
    "datetime": str, "datetime_format": str, "features": list,
    "target": str, "delimiter": str, "missing": ("error", "ffill", "mean", "drop"),
    "window": int, "horizon": int, "stride": int,
    "val_fraction": Num(0, 1, low_open=True, high_open=True),
    "normalise": ("none", "standard", "minmax", "window", "change", "season"),
    "season": int, "context": int,
    "tokenizer": str, "max_chars": int, "sha256": str, "augment": dict,
}  # fmt: skip
# training-batch augmentation (train/augment.py): jitter's sd, each window's scale spread
AUGMENT = {"noise": Num(0), "scale": Num(0, 1, high_open=True)}
EVAL = {"every": int, "batch_size": int, "metrics": list, "split": ("val", "train"),
        "early_stopping": dict, "plateau_metric": str, "season": int}  # fmt: skip
EARLY_STOPPING = {"metric": str, "patience": int, "min_delta": Num(0), "mode": ("min", "max")}


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def hint(word: str, pool) -> str | None:
    """'did you mean ...?' for the closest name (ties: the one of the same length)."""
    pool = [p for p in pool if isinstance(p, str)]
    if not pool or len(word) > 200:
        return None
    best = min(pool, key=lambda p: (_distance(word, p), abs(len(p) - len(word)), p))
    if _distance(word, best) > max(2, len(word) // 4):
        close = difflib.get_close_matches(word, pool, n=1)
        if not close:
            return None
        best = close[0]
    return f"did you mean {best!r}?"


def _int(v, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= MAX_INT


def _int_problem(k: str, v, low: int) -> str | None:
    if _int(v, low):
        return None
    if isinstance(v, int) and not isinstance(v, bool) and v > MAX_INT:
        return f"{k} must fit in 63 bits (at most {MAX_INT}), got {v!r:.40}"
    what = "a non-negative" if low == 0 else "a positive"
    return f"{k} must be {what} integer, got {v!r:.40}"


def check_options(doc: Document, path: tuple, spec: dict, out: list) -> None:
    """A free-standing section (precision, data, eval): known keys and simple types."""
    sec = doc.data if doc.node(path) else None
    for key in path:
        sec = sec.get(key) if isinstance(sec, dict) else None
    name = ".".join(map(str, path))
    policy = spec.get("policy")
    if isinstance(sec, str) and isinstance(policy, tuple):
        # the short form `precision: mixed_f16` names the policy alone
        if sec not in policy:
            out.append(
                doc.diag(path, f"{path[0]} must be one of {' | '.join(policy)}, got {sec!r}")
            )
        return
    if not isinstance(sec, dict):
        out.append(doc.diag(path, f"{name} must be a mapping"))
        return
    for k, v in sec.items():
        rule, p = spec.get(k), path + (k,)
        if rule is None:
            out.append(doc.diag(p, f"unknown {name} key {k!r}", hint(k, spec), key=True))
        elif isinstance(rule, tuple) and v not in rule:
            out.append(doc.diag(p, f"{k} must be one of {' | '.join(rule)}, got {v!r}"))
        elif isinstance(rule, Num) and (problem := rule.problem(k, v)):
            out.append(doc.diag(p, problem))
        elif rule is float and (problem := Num().problem(k, v)):
            out.append(doc.diag(p, problem))
        elif rule is int and (problem := _int_problem(k, v, 1)):
            out.append(doc.diag(p, problem))
        elif rule in (str, list, bool, dict) and not isinstance(v, rule):
            out.append(doc.diag(p, f"{k} must be a {rule.__name__}, got {v!r}"))


def _check_inputs(doc: Document, out: list) -> None:
    inputs = doc.data.get("inputs")
    if not isinstance(inputs, dict) or not inputs:
        out.append(
            doc.diag(
                ("inputs",),
                "inputs must map each input name to {shape, dtype}",
                "e.g. inputs: {x: {shape: [batch, seq, 1], dtype: f32}}",
            )
        )
        return
    for name, spec in inputs.items():
        p = ("inputs", name)
        if not NAME.match(name):
            out.append(doc.diag(p, f"input name {name!r} is not a plain identifier", key=True))
        if not isinstance(spec, dict):
            out.append(doc.diag(p, f"input {name!r} must be {{shape: [...], dtype: ...}}"))
            continue
        for k in spec:
            if k not in ("shape", "dtype"):
                out.append(
                    doc.diag(
                        p + (k,), f"unknown input key {k!r}", hint(k, ("shape", "dtype")), key=True
                    )
                )
        shape = spec.get("shape")
        if not isinstance(shape, list) or not shape:
            out.append(doc.diag(p + ("shape",), f"input {name!r} needs a shape list"))
        else:
            for i, d in enumerate(shape):
                if not (_int(d, 1) or (isinstance(d, str) and NAME.match(d))):
                    out.append(
                        doc.diag(
                            p + ("shape", i),
                            f"dim {d!r} must be a positive integer or a symbolic name like batch",
                        )
                    )
        dt = spec.get("dtype", "f32")
        if dt not in DTYPES:
            out.append(
                doc.diag(
                    p + ("dtype",),
                    f"dtype must be one of {' | '.join(DTYPES)}, got {dt!r}",
                    hint(str(dt), DTYPES),
                )
            )


def _check_grad_clip(doc: Document, out: list) -> None:
    g = doc.data["grad_clip"]
    keys = ("max_norm", "max_value")
    if not isinstance(g, dict) or len(g) != 1 or next(iter(g)) not in keys:
        out.append(doc.diag(("grad_clip",), "grad_clip is {max_norm: N} or {max_value: V}"))
        return
    k, v = next(iter(g.items()))
    if problem := Num(0, low_open=True).problem(k, v):
        out.append(doc.diag(("grad_clip", k), problem))


def _check_remat(doc: Document, out: list) -> None:
    d = doc.data
    if REMAT in d and not isinstance(d[REMAT], bool):
        out.append(doc.diag((REMAT,), f"{REMAT} must be true or false, got {d[REMAT]!r}"))
    blocks = d.get("blocks") if isinstance(d.get("blocks"), dict) else {}
    for name, spec in blocks.items():
        if isinstance(spec, dict) and REMAT in spec and not isinstance(spec[REMAT], bool):
            p = ("blocks", name, REMAT)
            out.append(doc.diag(p, f"{REMAT} must be true or false, got {spec[REMAT]!r}"))


def _check_extensions(doc: Document, out: list) -> None:
    # only the shape here: the catalog loads the paths (relative to the record's folder)
    ext = doc.data["extensions"]
    if not isinstance(ext, list):
        out.append(
            doc.diag(
                ("extensions",),
                f"extensions must be a list of paths or module names, got {ext!r}",
                "e.g. extensions: [my_blocks.py]",
            )
        )
        return
    for i, item in enumerate(ext):
        if not isinstance(item, str) or not item.strip():
            msg = f"an extension is a path or a dotted module name, got {item!r}"
            out.append(doc.diag(("extensions", i), msg))


def check_record(doc: Document) -> list:
    """Diagnostics for the record's structure and pipeline scalars, in document order."""
    out: list = []
    d = doc.data
    for k in d:
        if k not in SECTIONS:
            out.append(doc.diag((k,), f"unknown section {k!r}", hint(k, SECTIONS), key=True))
    mid = d.get("model")
    if "model" not in d:
        out.append(doc.diag((), "missing 'model: namespace/name@version'"))
    elif not isinstance(mid, str) or not MODEL_ID.match(mid):
        out.append(
            doc.diag(
                ("model",),
                f"model id {mid!r} is not namespace/name@version",
                "e.g. user/ada/tiny_transformer@3",
            )
        )
    _check_inputs(doc, out)
    if not isinstance(d.get("blocks"), dict) or not d["blocks"]:
        out.append(doc.diag(("blocks",), "blocks must map block names to {block_id, in, ...}"))
    tier = d.get("determinism_tier")
    if "determinism_tier" not in d:
        out.append(
            doc.diag(
                (),
                "missing determinism_tier (debug | prod | fast)",
                "it is never defaulted: add 'determinism_tier: debug'",
            )
        )
    elif tier not in TIERS:
        out.append(
            doc.diag(
                ("determinism_tier",),
                f"determinism_tier must be debug | prod | fast, got {tier!r}",
                hint(str(tier), TIERS),
            )
        )
    for k, low in (("epochs", 1), ("batch_size", 1), ("seed", 0)):
        if k in d and (problem := _int_problem(k, d[k], low)):
            out.append(doc.diag((k,), problem))
    if "grad_clip" in d:
        _check_grad_clip(doc, out)
    _check_remat(doc, out)
    if "extensions" in d:
        _check_extensions(doc, out)
    for k, spec in (("precision", PRECISION), ("data", DATA), ("eval", EVAL)):
        if k in d:
            check_options(doc, (k,), spec, out)
    _check_augment(doc, out)
    return out


def _check_augment(doc: Document, out: list) -> None:
    data = doc.data.get("data")
    aug = data.get("augment") if isinstance(data, dict) else None
    if not isinstance(aug, dict):
        return  # absent, or already reported as not a mapping
    check_options(doc, ("data", "augment"), AUGMENT, out)
    if data.get("format") == "text":
        out.append(doc.diag(("data", "augment"), "data.augment applies to numeric windows, "
                            "not to text data"))  # fmt: skip
