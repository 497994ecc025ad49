"""Name maps that split and merge tensors (codecs layer): ``--map`` rules.

A rule is ``OLD=NEW``: a rename (``OLD.=NEW.`` renames a prefix). Either side may list
several names, comma-separated, to split one file tensor into several parameters or
merge several into one, along axis 0 unless the rule ends in ``@AXIS``:

    in_proj_weight=attn.q.weight,attn.k.weight,attn.v.weight    three equal parts
    w=a.weight:32,b.weight:16@1                                  parts of 32 and 16 columns
    q.weight,k.weight,v.weight=in_proj.weight                    one tensor, concatenated

Splits and merges act on the file's tensors before names are matched to parameters,
so their results are renamed by no other rule. A ``--map`` value that names a file
(and holds no ``=``) is read as rules, one a line; ``#`` starts a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ScellisError
from ..base.files import read_file
from .raw import ITEMSIZE, RawTensor, numel

_AXIS = re.compile(r"^(.*)@(-?[0-9]+)$")
_SIZE = re.compile(r"[0-9]+")
MAX_MAP_BYTES = 4 << 20  # MAX_RULES rules of 400 characters; more is not a name map
_LONGEST = 18  # digits of a size or axis: more is no tensor's, and int() would refuse past 4300
# a model's whole state dict is a few thousand names: a map of more rules, or a split
# into more parts, is no name map (and each rule costs work at every tensor name)
MAX_RULES = 10_000
MAX_PARTS = 1024


def _shown(rule: str) -> str:
    """A rule as messages quote it: a pasted megabyte stays one readable line."""
    return repr(rule if len(rule) <= 120 else rule[:117] + "...")


@dataclass(frozen=True)
class Reshape:
    """One tensor into several (``split``) or several into one (``merge``)."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    sizes: tuple[int | None, ...] = ()  # per target of a split; None: equal parts
    axis: int = 0
    text: str = ""
    origin: str = "--map"  # where the rule was given: "--map" or "FILE:LINE: --map"

    def fail(self, why: str) -> ScellisError:
        return ScellisError(f"{self.origin} {_shown(self.text)}: {why}")


@dataclass
class TensorMap:
    renames: dict[str, str] = field(default_factory=dict)
    reshapes: list[Reshape] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.renames or self.reshapes)


def _refuse(rule: str, why: str) -> ScellisError:
    return ScellisError(f"--map {_shown(rule)}: {why}")


def _names(side: str, rule: str) -> list[str]:
    if side.count(",") >= MAX_PARTS:
        raise _refuse(rule, f"over {MAX_PARTS} names on one side")
    names = [n.strip() for n in side.split(",")]
    if any(not n for n in names):
        raise _refuse(rule, f"an empty name in {_shown(side)}")
    seen: set[str] = set()
    for n in names:  # a split would keep one part of two, a merge would look for a taken tensor
        if n in seen:
            raise _refuse(rule, f"{_shown(n)} is named twice")
        seen.add(n)
    return names


def _sized(name: str, rule: str) -> tuple[str, int | None]:
    if ":" not in name:
        return name, None
    base, size = name.rsplit(":", 1)
    if not _SIZE.fullmatch(size) or len(size) > _LONGEST or int(size) < 1:
        raise _refuse(rule, f"the size of {base!r} must be a positive integer")
    return base, int(size)


def parse_rule(rule: str, into: TensorMap, origin: str = "--map") -> None:
    if "=" not in rule:
        raise ScellisError(
            f"--map takes OLD=NEW (e.g. model.=, or w=a,b to split), got {_shown(rule)}"
        )
    if rule.count("=") > 1:
        raise _refuse(rule, "one '=' a rule (OLD=NEW)")
    body, axis = rule, 0
    m = _AXIS.match(rule)
    if m:
        if len(m.group(2).lstrip("-")) > _LONGEST:
            raise _refuse(rule, f"no tensor has an axis {m.group(2)[:20]}...")
        body, axis = m.group(1), int(m.group(2))
    old, new = body.split("=", 1)
    olds, news = _names(old, rule), _names(new, rule)
    if len(olds) > 1 and len(news) > 1:
        raise _refuse(rule, "several names on both sides; split or merge")
    if len(olds) == len(news) == 1 and not m and ":" not in new:
        _rename(into, olds[0], news[0], rule)
        return
    if len(olds) == 1 and len(news) == 1:
        raise _refuse(rule, "@AXIS and :SIZE go with several names")
    sized = [_sized(n, rule) for n in news]
    sizes = tuple(s for _, s in sized)
    if len(olds) == 1 and any(s is not None for s in sizes) and None in sizes:
        raise _refuse(rule, "give every part a size, or none")
    if len(olds) > 1 and any(s is not None for s in sizes):
        raise _refuse(rule, "a merge takes no sizes")
    targets = tuple(n for n, _ in sized)
    split_sizes = sizes if len(olds) == 1 else ()
    into.reshapes.append(Reshape(tuple(olds), targets, split_sizes, axis, rule, origin))


def _rename(into: TensorMap, old: str, new: str, rule: str) -> None:
    if into.renames.get(old, new) != new:  # the later rule would silently win
        raise _refuse(rule, f"{old!r} is already renamed to {into.renames[old]!r}")
    into.renames[old] = new


def _rules_file(item: str) -> Path | None:
    """The file a ``--map`` value names, if it names one (a rule holds ``=``)."""
    path = Path(item)
    try:
        if "=" in item or not item.strip() or "\x00" in item or not path.exists():
            return None
    except OSError:  # a name too long to be a path: a (malformed) rule
        return None
    if not path.is_file():  # a folder, or a FIFO that would block the read
        raise ScellisError(f"--map {item}: a map file must be a regular file")
    return path


def _count(n: int) -> None:
    """Refuse a map past MAX_RULES rules (before the rule that would cross it is read)."""
    if n > MAX_RULES:
        raise ScellisError(f"--map: over {MAX_RULES} rules; a name map is at most that long")


def parse(items) -> TensorMap:
    """``--map`` values (rules, or files of rules) as one map, at most MAX_RULES."""
    out, rules = TensorMap(), 0
    _count(len(items))
    for item in items:
        path = _rules_file(item)
        if path is not None:
            try:
                text = read_file(path, limit=MAX_MAP_BYTES).decode("utf-8")
            except UnicodeDecodeError:
                raise ScellisError(f"{item}: a map file must be UTF-8 text") from None
            for n, line in enumerate(text.splitlines(), 1):
                line = line.split("#", 1)[0].strip()
                if line:
                    rules += 1
                    _count(rules)
                    try:
                        parse_rule(line, out, f"{item}:{n}: --map")
                    except ScellisError as e:
                        raise ScellisError(f"{item}:{n}: {e}") from None
            continue
        rules += 1
        _count(rules)
        parse_rule(item, out)
    _no_dead_renames(out)
    return out


def _no_dead_renames(m: TensorMap) -> None:
    """A rename of a name a split or merge takes or makes would do nothing (reshapes run
    first and their results are renamed by no rule): refused rather than ignored."""
    for r in m.reshapes:
        for name in (*r.sources, *r.targets):
            if name in m.renames:
                raise r.fail(
                    f"{name!r} is also renamed (to {m.renames[name]!r}), which a split or "
                    "merge leaves undone: name the final names in this rule"
                )


# -- bytes ---------------------------------------------------------------------------------


def _blocks(t: RawTensor, axis: int) -> tuple[int, int]:
    """(rows before ``axis``, bytes per unit along ``axis``)."""
    outer = numel(t.shape[:axis])
    unit = numel(t.shape[axis + 1 :]) * ITEMSIZE[t.dtype][0]
    return outer, unit


def split(t: RawTensor, axis: int, sizes: list[int]) -> list[RawTensor]:
    outer, unit = _blocks(t, axis)
    row = t.shape[axis] * unit
    parts, start = [], 0
    for s in sizes:
        data = b"".join(
            t.data[o * row + start * unit : o * row + (start + s) * unit] for o in range(outer)
        )
        shape = list(t.shape)
        shape[axis] = s
        parts.append(RawTensor(t.dtype, tuple(shape), data))
        start += s
    return parts


def concat(parts: list[RawTensor], axis: int) -> RawTensor:
    outer, _ = _blocks(parts[0], axis)
    rows = [p.shape[axis] * _blocks(p, axis)[1] for p in parts]
    data = b"".join(p.data[o * r : (o + 1) * r] for o in range(outer) for p, r in zip(parts, rows))
    shape = list(parts[0].shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    return RawTensor(parts[0].dtype, tuple(shape), data)


# -- applying ------------------------------------------------------------------------------


def _axis(r: Reshape, t: RawTensor, name: str) -> int:
    n = len(t.shape)
    if not -n <= r.axis < n:
        raise r.fail(f"{name!r} has {n} axes, no axis {r.axis}")
    return r.axis % n


def _held(tensors: dict) -> str:
    names = list(tensors)
    return ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")


def _take(tensors: dict, name: str, r: Reshape) -> RawTensor:
    if name not in tensors:
        raise r.fail(f"the file has no tensor {name!r} (it holds {_held(tensors)})")
    return tensors.pop(name)


def _put(tensors: dict, name: str, t: RawTensor, r: Reshape) -> None:
    if name in tensors:  # the file's own tensor (or another rule's result) would be lost
        raise r.fail(f"{name!r} is already a tensor of the file (or of another rule)")
    tensors[name] = t


def _split(tensors: dict, r: Reshape) -> None:
    name = r.sources[0]
    t = _take(tensors, name, r)
    axis = _axis(r, t, name)
    n, k = t.shape[axis], len(r.targets)
    if r.sizes and r.sizes[0] is not None:
        sizes = list(r.sizes)
        if sum(sizes) != n:
            raise r.fail(
                f"sizes {'+'.join(map(str, sizes))}={sum(sizes)} do not add up to {name!r}'s "
                f"{n} along axis {axis} (shape {list(t.shape)})"
            )
    elif n % k:
        raise r.fail(
            f"{name!r} has {n} along axis {axis}, not divisible into {k} equal parts "
            "(give each part a size, NAME:SIZE)"
        )
    else:
        sizes = [n // k] * k
    for target, part in zip(r.targets, split(t, axis, sizes)):
        _put(tensors, target, part, r)


def _merge(tensors: dict, r: Reshape) -> None:
    parts = [_take(tensors, n, r) for n in r.sources]
    axis = _axis(r, parts[0], r.sources[0])
    first = parts[0]
    for name, p in zip(r.sources, parts):
        others = [d for i, d in enumerate(p.shape) if i != axis]
        if (
            p.dtype != first.dtype
            or len(p.shape) != len(first.shape)
            or others != [d for i, d in enumerate(first.shape) if i != axis]
        ):
            raise r.fail(
                f"{name!r} ({p.dtype} {list(p.shape)}) does not stack with "
                f"{r.sources[0]!r} ({first.dtype} {list(first.shape)}) along axis {axis}"
            )
    _put(tensors, r.targets[0], concat(parts, axis), r)


def apply(tensors: dict[str, RawTensor], m: TensorMap) -> dict[str, RawTensor]:
    """The file's tensors with every split and merge done (renames are ``weights``')."""
    out = dict(tensors)
    for r in m.reshapes:
        (_split if len(r.sources) == 1 else _merge)(out, r)
    return out
