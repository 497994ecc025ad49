"""A record's optimizer param groups (model layer): ``optimizer.groups`` over named parameters.

::

    optimizer:
      block_id: training/optimizer/adamw
      lr: 3.0e-3
      weight_decay: 0.1
      groups:
        - { params: "*.bias|*norm*", weight_decay: 0 }

``params`` is one or more glob patterns (``fnmatch``: ``*``, ``?``, ``[...]``) joined by
``|``, matched against the model's dotted parameter names (``body.layers.0.attn.q.bias``).
A parameter joins the first group that matches it; the others form the main group,
which takes the section's own options and comes first, as torch users usually list
them. A group's keys are ``params`` and options of the optimizer (their values replace
the section's for that group).
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from ..base.errors import ScellisError
from .build import entry_object

GROUPS = "groups"


def patterns(spec: str) -> list[str]:
    return [p.strip() for p in spec.split("|") if p.strip()]


def matches(spec: str, name: str) -> bool:
    return any(fnmatchcase(name, p) for p in patterns(spec))


def split_names(groups: list[dict], names: list[str]) -> tuple[list[str], list[list[str]]]:
    """(main group's names, each group's names): each name goes to the first group whose
    pattern matches it, or to the main group."""
    taken: list[list[str]] = [[] for _ in groups]
    main = []
    for name in names:
        k = next((i for i, g in enumerate(groups) if matches(str(g["params"]), name)), None)
        (main if k is None else taken[k]).append(name)
    return main, taken


def unmatched(groups: list[dict], names: list[str]) -> list[int]:
    """The groups no parameter falls into (none matches, or earlier groups took them all)."""
    _, taken = split_names(groups, names)
    return [i for i, t in enumerate(taken) if not t]


def optimizer_of(section: dict, model):
    """The optimizer a record's ``optimizer`` section names, over ``model``'s trainable
    parameters, in param groups when the section has ``groups``."""
    groups = section.get(GROUPS)
    if not groups:
        return entry_object({k: v for k, v in section.items() if k != GROUPS}, "optimizer", model)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    by_name = dict(named)
    main, taken = split_names(groups, list(by_name))
    empty = [str(groups[i]["params"]) for i, t in enumerate(taken) if not t]
    if empty:
        raise ScellisError(f"optimizer.groups: {empty[0]!r} matches no trainable parameter")
    param_groups = [{"params": [(n, by_name[n]) for n in main]}] if main else []
    for g, names in zip(groups, taken):
        options = {k: tuple(v) if isinstance(v, list) else v for k, v in g.items()}
        options.pop("params")
        param_groups.append({"params": [(n, by_name[n]) for n in names], **options})
    base = {k: v for k, v in section.items() if k != GROUPS}
    return entry_object(base, "optimizer", param_groups)
