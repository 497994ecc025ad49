"""How a run is driven, declared once (run layer): ``RunOptions``.

Each field carries its doc, default, bounds and where it appears (``surfaces``): the
``train`` and ``resume`` commands' click options (``cli/run_options.py``), the tab's
run controls (``schema("tab")``, rendered by the run panel) and the run's stored
config (``to_config``/``from_config``, what a resume reads back on either host) are
all made from these fields, so an option added here appears everywhere at once.

Fields with a ``record`` path are shorthands that change the record itself
(``--lr 3e-4`` is ``--set optimizer.lr=3e-4``): the run records the effective record,
so those are not stored as options. ``set`` holds the general ``PATH=VALUE`` edits.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import ScellisError, shown
from ..sml.loader import load

CLI, RESUME, TAB = "train", "resume", "tab"


def opt(default, doc: str, *, low=None, above=None, surfaces=(CLI, TAB), tab=None,
        record=None, flag=None):  # fmt: skip
    """A run option: ``low``/``above`` bound numbers (>= low, > above); ``tab``: the
    tab's own default where it differs; ``record``: the record path a shorthand sets;
    ``flag``: the command line's name where it is not ``--field-name``."""
    meta = dict(doc=doc, low=low, above=above, surfaces=tuple(surfaces), tab=tab,
                record=record, flag=flag)  # fmt: skip
    if isinstance(default, (list, tuple)):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class RunOptions:
    """How one run is driven (see the module note)."""

    # -- shorthands for the record's own fields --
    epochs: int | None = opt(None, "train for this many epochs (the record's epochs)",
                             low=1, record=("epochs",))  # fmt: skip
    lr: float | None = opt(None, "learning rate (the record's optimizer.lr)", above=0.0,
                           record=("optimizer", "lr"), surfaces=(CLI,))  # fmt: skip
    batch_size: int | None = opt(None, "batch size (the record's batch_size)", low=1,
                                 record=("batch_size",), surfaces=(CLI,))  # fmt: skip
    seed: int | None = opt(None, "seed of every random stream (the record's seed)", low=0,
                           record=("seed",), surfaces=(CLI,))  # fmt: skip
    set: list = opt((), "PATH=VALUE: set a field of the record (dotted path; repeatable)",
                    surfaces=(CLI,))  # fmt: skip
    # -- how the run is driven --
    # the tab starts with a quick run (about a minute on a software GPU), so a first
    # result comes fast; clearing the field trains the record's full length
    max_steps: int | None = opt(None, "stop after this many steps in all", low=1, tab=60,
                                surfaces=(CLI, RESUME, TAB))  # fmt: skip
    log_every: int = opt(1, "steps between recorded metrics (1: every step)", low=1, tab=5)
    validate: bool = opt(True, "evaluate on the validation split")
    eval_every: int | None = opt(
        None, "steps between validations (default: at each epoch's end)", low=1, tab=10
    )  # the tab's first validation point comes early in its quick run
    val_rows: int | None = opt(None, "validate on the first N validation rows only", low=1)
    checkpoint_every: int | None = opt(
        None, "steps between checkpoints (default: at each epoch's end)", low=1, tab=10,
        surfaces=(CLI, RESUME, TAB),
    )  # fmt: skip
    checkpoint_minutes: float = opt(5.0, "at most this many minutes between checkpoints",
                                    above=0.0, surfaces=(CLI, RESUME, TAB))  # fmt: skip
    keep_last: int = opt(3, "checkpoints kept per run (the best one is kept too)", low=1,
                         surfaces=(CLI, RESUME))  # fmt: skip
    keep_best: bool = opt(True, "also keep the checkpoint with the best validation "
                          "(else training) loss", surfaces=(CLI, RESUME))  # fmt: skip
    drop_last: bool = opt(False, "drop each epoch's short last batch (one step shape)")
    replay: bool = opt(True, "replay the recorded step's dispatches where the step allows "
                       "(WebGPU; bitwise the eager results; off: every step eager)",
                       surfaces=(CLI, RESUME, TAB))  # fmt: skip
    samples: bool = opt(False, "forecast vs actual, or generated text, at the end", tab=True)
    text_samples: bool = opt(False, "generate text at every validation too (costly)")
    sample_chars: int = opt(40, "characters in a generated text sample", low=1)
    extensions: list = opt((), "user catalog entries to load (a folder, .py file or module)",
                           surfaces=(CLI, RESUME))  # fmt: skip

    # -- what the fields say about themselves --

    @classmethod
    def specs(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls))

    @classmethod
    def on(cls, surface: str) -> list[dataclasses.Field]:
        """The fields shown on ``surface`` (train, resume or tab)."""
        return [f for f in cls.specs() if surface in f.metadata["surfaces"]]

    @classmethod
    def defaults(cls, surface: str = CLI) -> RunOptions:
        """The options a surface starts from (the tab has a few defaults of its own)."""
        out = cls()
        if surface == TAB:
            for f in cls.specs():
                if f.metadata["tab"] is not None:
                    setattr(out, f.name, f.metadata["tab"])
        return out

    @classmethod
    def from_mapping(cls, values: dict, *, surface: str = CLI, base: RunOptions | None = None,
                     where: str = "train") -> RunOptions:  # fmt: skip
        """``base`` (or the surface's defaults) with ``values`` checked and applied; None
        keeps the base's value. One clear message for an unknown name or a bad value."""
        out = dataclasses.replace(base) if base is not None else cls.defaults(surface)
        known = {f.name: f for f in cls.specs()}
        for name, value in values.items():
            f = known.get(name)
            if f is None:
                raise ScellisError(f"{where}: unknown run option {name!r}")
            if value is None and _nullable(f):
                setattr(out, name, None)
            elif value is not None:
                setattr(out, name, check_value(f, value, where))
        return out

    # -- the stored config --

    def to_config(self) -> dict:
        """The options a run's config keeps (the record's shorthands live in the record)."""
        return {f.name: _plain(getattr(self, f.name)) for f in self.specs()
                if f.metadata["record"] is None and f.name != "set"}  # fmt: skip

    @classmethod
    def from_config(cls, config: dict) -> RunOptions:
        """The options a run was started with, from its stored config. A config written
        before options were kept together (``plan`` + the tab's ``tab``) reads the same."""
        stored = config.get("options")
        if stored is None:
            stored = {**(config.get("plan") or {}), **(config.get("tab") or {})}
            stored.pop("epochs", None)  # that config's epochs: ``legacy_epochs``
        known = {f.name for f in cls.specs()}
        kept = {k: v for k, v in stored.items() if k in known}
        return cls.from_mapping(kept, base=cls(), where="stored run config")

    def record_edits(self) -> list[tuple[tuple[str, ...], Any, str]]:
        """The record fields the shorthands and ``set`` change: (path, value, as typed)."""
        edits = []
        for f in self.specs():
            path, value = f.metadata["record"], getattr(self, f.name)
            if path is not None and value is not None:
                edits.append((path, value, f"{'.'.join(path)}={value}"))
        check_sets(self.set)
        for item in self.set:
            edits.append((*parse_set(item), item))
        return edits


def legacy_epochs(config: dict) -> int | None:
    """The epochs an older run's config drove it for (now the record holds them)."""
    return (config.get("plan") or {}).get("epochs") if "options" not in config else None


def _nullable(f) -> bool:
    return "None" in str(f.type)


def _plain(value):
    return list(value) if isinstance(value, (list, tuple)) else value


def kind_of(f) -> str:
    """The value kind of a field: bool, int, float or list."""
    t = str(f.type)
    for name in ("bool", "int", "float", "list"):
        if t.startswith(name):
            return name
    raise TypeError(f"run option {f.name} has an unsupported type {t}")


def check_value(f, value, where: str = "train"):
    """``value`` for field ``f``, or a ScellisError naming the option and its bounds."""
    kind, name = kind_of(f), f.name
    if kind == "bool":
        if not isinstance(value, bool):
            raise ScellisError(f"{where}: {name} must be true or false, got {value!r}")
        return value
    if kind == "list":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
            raise ScellisError(f"{where}: {name} must be a list of strings, got {value!r}")
        return list(items)
    ok = isinstance(value, int) if kind == "int" else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not math.isfinite(value):
        what = "a whole number" if kind == "int" else "a number"
        raise ScellisError(f"{where}: {name} must be {what}{_bounds(f)}, got {value!r}")
    low, above = f.metadata["low"], f.metadata["above"]
    if (low is not None and value < low) or (above is not None and value <= above):
        what = "a whole number" if kind == "int" else "a number"
        raise ScellisError(f"{where}: {name} must be {what}{_bounds(f)}, got {value!r}")
    return float(value) if kind == "float" else value


def _bounds(f) -> str:
    low, above = f.metadata["low"], f.metadata["above"]
    return f" >= {low}" if low is not None else f" > {above}" if above is not None else ""


# bounds on ``--set``, checked before any value is read: a run takes a handful of
# edits of short paths; a value is one small YAML value (a number, a name, a short list)
MAX_SETS = 100
MAX_SET_CHARS = 1000
MAX_SET_KEYS = 16
MAX_VALUE_DEPTH = 8
MAX_DIGITS = 40  # longer than any float's digits; int() of 5,000 digits is slow
_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}$")
_DIGITS = re.compile(f"[0-9]{{{MAX_DIGITS + 1}}}")


def check_sets(items) -> None:
    """Refuse more ``--set`` edits than a run takes, before any of them is read."""
    if len(items) > MAX_SETS:
        raise ScellisError(f"{len(items)} --set edits; the limit is {MAX_SETS}")


def parse_set(item: str) -> tuple[tuple[str, ...], Any]:
    """``optimizer.lr=3e-4`` as (("optimizer", "lr"), 0.0003): the value is read as YAML
    would read it (numbers, true/false, null, [lists], quoted or bare strings), through
    the SML loader's guards (no tags, aliases bounded before they expand)."""
    if len(item) > MAX_SET_CHARS:
        raise ScellisError(f"--set {shown(item, 40)}: {len(item)} characters; the limit is "
                           f"{MAX_SET_CHARS}")  # fmt: skip
    path, sep, text = item.partition("=")
    keys = tuple(k.strip() for k in path.split("."))
    if not sep or not all(keys):
        raise ScellisError(f"--set {shown(item, 80)}: expected PATH=VALUE, e.g. optimizer.lr=3e-4")
    if len(keys) > MAX_SET_KEYS or not all(_KEY.match(k) for k in keys):
        raise ScellisError(f"--set {shown(path, 80)}: a path is at most {MAX_SET_KEYS} dotted "
                           "names of letters, digits, '_' and '-'")  # fmt: skip
    return keys, _yaml_value(text.strip(), item)


def _yaml_value(text: str, item: str):
    where = f"--set {shown(item, 80)}"
    if not text:
        return ""
    if _DIGITS.search(text):
        raise ScellisError(f"{where}: a number of more than {MAX_DIGITS} digits")
    # nesting is bounded on the text itself, so a 20,000-deep value never reaches the parser
    opened = sum(text.count(c) for c in "[{")
    if opened > MAX_VALUE_DEPTH and _depth(text) > MAX_VALUE_DEPTH:
        raise ScellisError(f"{where}: the value nests deeper than {MAX_VALUE_DEPTH} levels")
    try:
        return load(text, "--set").data
    except ScellisError as e:
        message = getattr(e, "message", str(e))
        raise ScellisError(f"{where}: the value is not valid ({shown(message, 120)})") from None


def _depth(text: str) -> int:
    """The deepest bracket nesting of flow YAML text (quotes ignored: an over-count
    only refuses a value that is no value of a record anyway)."""
    deepest = level = 0
    for c in text:
        if c in "[{":
            level += 1
            deepest = max(deepest, level)
        elif c in "]}":
            level -= 1
    return deepest


def schema(surface: str = TAB) -> list[dict]:
    """The options of ``surface`` as plain data: name, kind, default, bounds, doc."""
    defaults = RunOptions.defaults(surface)
    return [
        {"name": f.name, "kind": kind_of(f), "default": _plain(getattr(defaults, f.name)),
         "nullable": _nullable(f), "low": f.metadata["low"], "above": f.metadata["above"],
         "doc": f.metadata["doc"]}
        for f in RunOptions.on(surface)
    ]  # fmt: skip


def schema_text(surface: str = TAB) -> str:
    return json.dumps(schema(surface), indent=1) + "\n"
