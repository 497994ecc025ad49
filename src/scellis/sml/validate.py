"""Validation of an SML record against a catalog (sml layer): ids, fields, wiring, shapes.

``validate`` returns every problem as a Diagnostic located at its node; the registry
is passed in (see ``registry.Registry``), never imported. A block's ``in`` names an
input or an earlier block (blocks run in document order); without ``in`` a block
reads the block before it, and the first block reads the first input.
"""

from __future__ import annotations

from ..base.errors import Diagnostic, ScellisError
from .document import NAME, Document
from .finetune import check_finetune
from .registry import FieldInfo, Registry, ShapeMismatch, out_of_range
from .schema import EARLY_STOPPING, MAX_INT, check_options, check_record, finite, hint

PIPELINE = {"optimizer": "optimizer", "scheduler": "scheduler", "loss": "loss"}


def _one(v, t: str) -> bool:
    t = t.strip()
    if t in ("None", "NoneType"):
        return v is None
    if t == "bool":
        return isinstance(v, bool)
    if isinstance(v, bool) and t in ("int", "float", "str"):
        return False
    if t in ("int", "float", "str"):
        return isinstance(v, {"int": int, "float": (int, float), "str": str}[t])
    if t.startswith("tuple[") and t.endswith(", ...]"):
        return isinstance(v, list) and all(_one(x, t[6:-6]) for x in v)
    if t.startswith("tuple[") and t.endswith("]") and "..." not in t:
        parts = t[6:-1].split(",")
        return isinstance(v, list) and len(v) == len(parts) and all(map(_one, v, parts))
    if t.split("[")[0] in ("tuple", "list"):
        return isinstance(v, list)
    return True  # a type SML does not know: the catalog checks it when it builds


def type_ok(v, t: str) -> bool:
    return any(_one(v, a) for a in t.split("|"))


def _numbers(name: str, v) -> str | None:
    """Every number a field holds (lists included) is finite, and an int fits in 63 bits."""
    if isinstance(v, list):
        return next((p for x in v if (p := _numbers(name, x))), None)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, int) and abs(v) > MAX_INT:
        return f"{name} must fit in 63 bits, got {v!r:.40}"
    return finite(name, v)


def _range(f: FieldInfo, v) -> str | None:
    if f.choices is not None and v not in f.choices:
        return f"{f.name} must be one of {' | '.join(map(str, f.choices))}, got {v!r:.80}"
    if problem := _numbers(f.name, v):
        return problem
    return out_of_range(f, v)


def check_entry(doc: Document, path: tuple, kind: str, reg: Registry, out: list, extra=()):
    """Check one ``{block_id, fields}`` mapping; its fields with defaults, or None if bad."""
    spec = _value_at(doc.data, path)
    label = ".".join(map(str, path[-2:])) if isinstance(path[-1], int) else path[-1]
    if not isinstance(spec, dict):
        out.append(doc.diag(path, f"{label} must be a mapping with a block_id"))
        return None
    bid = spec.get("block_id")
    if not isinstance(bid, str):
        ids = reg.ids(kind)
        out.append(doc.diag(path, f"{label} needs a block_id", ids and f"e.g. {ids[0]}"))
        return None
    found = reg.kind_of(bid)
    if found is None:
        close = hint(bid, reg.ids(kind))
        msg = f"unknown block_id {bid!r}" + (f"; {close}" if close else "")
        out.append(doc.diag(path + ("block_id",), msg))
        return None
    if found != kind:
        out.append(doc.diag(path + ("block_id",), f"{bid!r} is a {found}, not a {kind}"))
        return None
    infos = {f.name: f for f in reg.fields(bid)}
    n0, values = len(out), {k: f.default for k, f in infos.items()}
    for k, v in spec.items():
        if k == "block_id" or k in extra:
            continue
        p, f = path + (k,), infos.get(k)
        if f is None:
            close = hint(k, infos)
            msg = f"unknown field {k!r} of {bid}" + (f"; {close}" if close else "")
            out.append(doc.diag(p, msg, key=True))
        elif not type_ok(v, f.type):
            out.append(doc.diag(p, f"{k} must be {f.type}, got {v!r}"))
        elif (problem := _range(f, v)) is not None:
            out.append(doc.diag(p, problem))
        values[k] = v
    for k, f in infos.items():
        if f.required and k not in spec:
            fix = f"add {k}: <{f.type}>" + (f", {f.doc}" if f.doc else "")
            out.append(doc.diag(path, f"missing required field {k!r} of {bid}", fix))
    return values if len(out) == n0 else None


def _check_groups(doc: Document, reg: Registry, out: list) -> None:
    """``optimizer.groups``: a list of ``{params: "glob|glob", <optimizer option>: value}``
    (which parameters a pattern matches is checked against the built model)."""
    groups, path = doc.data["optimizer"]["groups"], ("optimizer", "groups")
    bid = doc.data["optimizer"].get("block_id")
    if not isinstance(groups, list) or not groups:
        out.append(doc.diag(path, "groups must be a list of {params: <patterns>, <options>}"))
        return
    infos = {f.name: f for f in reg.fields(bid)} if reg.kind_of(str(bid)) == "optimizer" else {}
    for i, g in enumerate(groups):
        at = path + (i,)
        if not isinstance(g, dict):
            out.append(doc.diag(at, "each group is a mapping {params: <patterns>, <options>}"))
            continue
        pattern = g.get("params")
        if not isinstance(pattern, str) or not pattern.strip("| "):
            fix = 'e.g. params: "*.bias|*norm*" (globs over parameter names, | between them)'
            out.append(doc.diag(at + ("params",), "a group needs params: a pattern string", fix))
        for k, v in g.items():
            f = infos.get(k)
            if k == "params" or not infos:
                continue
            if f is None:
                close = hint(k, [*infos, "params"])
                msg = f"unknown key {k!r} of an optimizer group: params or an option of {bid}"
                out.append(doc.diag(at + (k,), msg + (f"; {close}" if close else ""), key=True))
            elif not type_ok(v, f.type):
                out.append(doc.diag(at + (k,), f"{k} must be {f.type}, got {v!r}"))
            elif (problem := _range(f, v)) is not None:
                out.append(doc.diag(at + (k,), problem))


def _check_parts(doc: Document, path: tuple, reg: Registry, out: list) -> None:
    """A composite schedule's ``schedulers`` are scheduler sections themselves (checked
    like the top one, at their own line:col); with ``milestones`` (sequential), one
    milestone starts each part after the first."""
    spec = _value_at(doc.data, path)
    parts = spec.get("schedulers") if isinstance(spec, dict) else None
    if not isinstance(parts, list):
        return
    if not parts:
        out.append(doc.diag(path + ("schedulers",), "a composite schedule needs a scheduler"))
        return
    bid = str(spec.get("block_id"))
    known = reg.kind_of(bid) == "scheduler"
    for i in range(len(parts)):
        if check_entry(doc, path + ("schedulers", i), "scheduler", reg, out) is not None:
            if known and (problem := _not_multiplicative(reg, bid, parts[i]["block_id"])):
                out.append(doc.diag(path + ("schedulers", i, "block_id"), *problem))
        _check_parts(doc, path + ("schedulers", i), reg, out)
    ms = spec.get("milestones")
    known = known and "milestones" in {f.name for f in reg.fields(bid)}
    if known and isinstance(ms, list) and (problem := _milestones(len(parts), ms)):
        out.append(doc.diag(path + ("milestones",), problem))


def _not_multiplicative(reg: Registry, bid: str, part: str) -> tuple[str, str] | None:
    """A part ``bid`` cannot chain: torch chains only schedules that multiply the rate by
    a ratio of the step (the others depend on the order of float updates)."""
    needs = getattr(reg, "multiplicative_parts", None)
    if needs is None or not needs(bid) or reg.multiplicative(part):
        return None
    ok = [i.rsplit("/", 1)[-1] for i in reg.ids("scheduler") if reg.multiplicative(i)]
    fix = f"chain {', '.join(ok)}; run others one after another in a sequential schedule"
    return f"{part} is not a multiplicative schedule, so {bid} cannot chain it", fix


def _milestones(n_parts: int, ms: list) -> str | None:
    if len(ms) != n_parts - 1:
        return f"{n_parts} schedulers need {n_parts - 1} milestones, got {len(ms)}"
    steps = all(isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in ms)
    if not steps or ms != sorted(set(ms)):  # a part that never runs, or runs backwards
        return f"milestones must be increasing steps >= 1, got {ms!r:.80}"
    return None


def _value_at(data, path: tuple):
    for k in path:
        if isinstance(data, dict):
            data = data.get(k)
        elif isinstance(data, list) and isinstance(k, int) and 0 <= k < len(data):
            data = data[k]
        else:
            return None
    return data


def _refs(doc: Document, name: str, prev: str | None) -> tuple[list, bool]:
    spec = doc.blocks[name]
    raw = spec.get("in") if isinstance(spec, dict) else None
    if raw is None:
        return ([prev] if prev else []), False
    return (raw if isinstance(raw, list) else [raw]), True


def infer(doc: Document, reg: Registry, out: list) -> tuple[dict, dict]:
    """Check every block; returns (out shape per name, inputs per block)."""
    inputs = doc.data.get("inputs") if isinstance(doc.data.get("inputs"), dict) else {}
    shapes = {n: s.get("shape") for n, s in inputs.items() if isinstance(s, dict)}
    shapes = {n: s if isinstance(s, list) else None for n, s in shapes.items()}
    order, wiring = list(inputs), {}
    prev = order[0] if order else None
    later = set(doc.blocks)
    for name in doc.blocks:
        later.discard(name)
        path = ("blocks", name)
        if not NAME.match(str(name)) or name in inputs:
            out.append(doc.diag(path, f"block name {name!r} is not a fresh identifier", key=True))
        fields = check_entry(doc, path, "block", reg, out, extra=("in", "activation_checkpointing"))
        refs, explicit = _refs(doc, name, prev)
        wiring[name] = refs
        ok = True
        listed = isinstance(doc.blocks[name], dict) and isinstance(doc.blocks[name].get("in"), list)
        for i, r in enumerate(refs):
            p = path + ("in", i) if listed else path + ("in",)
            if not isinstance(r, str):
                out.append(doc.diag(p, f"block {name!r} reads {r!r}, which is not a name"))
                ok = False
            elif r in later:
                out.append(doc.diag(p, f"block {name!r} reads {r!r}, which comes after it",
                                    "blocks run in document order"))  # fmt: skip
                ok = False
            elif r not in shapes:
                out.append(doc.diag(p, f"block {name!r} reads {r!r}, which does not exist",
                                    hint(r, list(shapes))))  # fmt: skip
                ok = False
        if not explicit and not refs:
            out.append(doc.diag(path, f"block {name!r} reads nothing", "add 'in: <input name>'"))
        shapes[name] = None
        if ok and fields is not None and refs and all(shapes[r] is not None for r in refs):
            shapes[name] = _shape(doc, reg, name, fields, refs, [shapes[r] for r in refs], out)
        prev = name
    return shapes, wiring


def _shape(doc, reg, name, fields, refs, in_shapes, out):
    rule = getattr(reg, "infer_shape", None)
    if rule is None:
        return None
    path = ("blocks", name, "in")
    try:
        return rule(doc.blocks[name]["block_id"], fields, in_shapes)
    except ShapeMismatch as e:
        src = refs[min(e.index, len(refs) - 1)]
        msg = f"shape mismatch: {name!r} expects {e.what} {e.expected}, {src!r} gives {e.got}"
        # a width the block reads from another block (or an input): it can follow it
        follows = e.field is not None and isinstance(e.got, int) and not isinstance(e.got, bool)
        d = doc.diag(path, msg, f"set {name}.{e.field}: {e.got}" if follows else None)
        if follows:
            d.sets = {f"blocks.{name}.{e.field}": e.got}
        out.append(d)
    except ScellisError as e:
        out.append(doc.diag(path, f"block {name!r}: {e}"))
    return None


def _outputs(doc: Document, shapes: dict, out: list) -> None:
    raw = doc.data.get("outputs")
    if raw is None:
        return
    if isinstance(raw, dict):
        items = list(raw.items())
    else:
        items = list(enumerate(raw)) if isinstance(raw, list) else [(None, raw)]
    for key, ref in items:
        p = ("outputs",) if key is None else ("outputs", key)
        if not isinstance(ref, str) or ref not in shapes:
            out.append(
                doc.diag(p, f"output {ref!r} names no block or input", hint(str(ref), shapes))
            )


def _metric_names(doc: Document, reg: Registry, out: list) -> list[str]:
    """Check ``eval.metrics`` against the registry's metrics; the names they report as."""
    specs = (doc.data.get("eval") or {}).get("metrics")
    if not isinstance(specs, list):
        return []
    known = reg.ids("metric")
    names = []
    for i, spec in enumerate(specs):
        path = ("eval", "metrics", i)
        name = spec if isinstance(spec, str) else (spec or {}).get("metric") if isinstance(
            spec, dict) else None  # fmt: skip
        if not isinstance(name, str):
            out.append(doc.diag(path, "a metric is a name (mae) or {metric: name, options}"))
            continue
        mid = name if "/" in name else f"metric/{name}"
        if reg.kind_of(mid) != "metric":
            close = hint(name, [k.rsplit("/", 1)[-1] for k in known])
            msg = f"unknown metric {name!r}" + (f"; {close}" if close else "")
            out.append(
                doc.diag(
                    path if isinstance(spec, str) else path + ("metric",),
                    msg,
                    "metrics: " + ", ".join(k.rsplit("/", 1)[-1] for k in known),
                )
            )
            continue
        if isinstance(spec, dict):
            infos = {f.name: f for f in reg.fields(mid)}
            for k, v in spec.items():
                f = infos.get(k)
                if k == "metric":
                    continue
                if f is None:
                    out.append(doc.diag(path + (k,), f"unknown option {k!r} of {name}", key=True))
                elif not type_ok(v, f.type) or (problem := _range(f, v)) is not None:
                    out.append(
                        doc.diag(
                            path + (k,),
                            f"{k} must be {f.type}, got {v!r}"
                            if not type_ok(v, f.type)
                            else problem,
                        )
                    )
        base = mid.rsplit("/", 1)[-1]
        if base == "top_k_accuracy" and isinstance(spec, dict) and "k" in spec:
            base = f"top_{spec['k']}_accuracy"
        names.append(base)
    return names


def _check_monitors(doc: Document, names: list[str], out: list) -> None:
    """What early stopping and reduce_on_plateau watch: loss, val_loss or a listed metric."""
    ev = doc.data.get("eval") or {}
    watchable = ["loss", "val_loss", *(f"val_{n}" for n in names)]
    targets = []
    if isinstance(ev.get("early_stopping"), dict):
        check_options(doc, ("eval", "early_stopping"), EARLY_STOPPING, out)
        targets.append((("eval", "early_stopping", "metric"), ev["early_stopping"].get("metric")))
    targets.append((("eval", "plateau_metric"), ev.get("plateau_metric")))
    for path, name in targets:
        if isinstance(name, str) and name not in watchable:
            out.append(doc.diag(path, f"{name!r} is not measured by this run",
                                "one of " + ", ".join(watchable)))  # fmt: skip
    season = ev.get("season")
    if season is not None and (not isinstance(season, int) or season < 2):
        out.append(
            doc.diag(("eval", "season"), f"season must be a whole number >= 2, got {season!r}")
        )


def validate(doc: Document, registry: Registry) -> list[Diagnostic]:
    """Every problem of the record, sorted by position; an empty list means valid."""
    out = check_record(doc)
    if isinstance(doc.data.get("eval"), dict):
        _check_monitors(doc, _metric_names(doc, registry, out), out)
    shapes, _ = infer(doc, registry, out)
    _outputs(doc, shapes, out)
    for sec, kind in PIPELINE.items():
        if sec in doc.data:
            extra = ("groups",) if sec == "optimizer" else ()
            check_entry(doc, (sec,), kind, registry, out, extra)
    if isinstance(doc.data.get("optimizer"), dict) and "groups" in doc.data["optimizer"]:
        _check_groups(doc, registry, out)
    if isinstance(doc.data.get("scheduler"), dict):
        _check_parts(doc, ("scheduler",), registry, out)
    if "finetune" in doc.data:
        for path in check_finetune(doc, registry, out):
            check_entry(doc, path, "peft", registry, out)
    return sorted(out, key=lambda d: (d.line, d.col))
