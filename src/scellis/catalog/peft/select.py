"""Name patterns and module surgery for fine-tuning (catalog layer).

A pattern is a shell glob over dotted parameter or module paths (``fnmatchcase``:
``*`` also crosses dots, so ``encoder.*`` is everything under ``encoder``). A pattern
with no dot and no wildcard also matches a path's last part, so ``q`` names every
``...attn.q`` (PEFT's ``target_modules: [q, v]``). A pattern that matches nothing is
an error: a typo must not silently fine-tune the whole model.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from ...base.errors import ScellisError
from ..module import Module, ModuleList

_WILD = set("*?[")


def as_patterns(patterns) -> tuple[str, ...]:
    """One pattern or a sequence of them, as a tuple of strings."""
    if isinstance(patterns, str):
        return (patterns,)
    out = tuple(patterns)
    for p in out:
        if not isinstance(p, str) or not p:
            raise ScellisError(f"a name pattern must be a non-empty string, got {p!r}")
    return out


def matches(path: str, pattern: str) -> bool:
    if fnmatchcase(path, pattern):
        return True
    plain = "." not in pattern and not (_WILD & set(pattern))
    return plain and path.rsplit(".", 1)[-1] == pattern


def select(paths, patterns, what: str) -> list[str]:
    """The paths (in their order) that match any pattern; each pattern must match one."""
    paths, patterns = list(paths), as_patterns(patterns)
    for pat in patterns:
        if not any(matches(p, pat) for p in paths):
            shown = ", ".join(paths[:12]) + (", ..." if len(paths) > 12 else "")
            raise ScellisError(f"pattern {pat!r} matches no {what}; there are: {shown or 'none'}")
    return [p for p in paths if any(matches(p, pat) for pat in patterns)]


def resolve(root: Module, path: str) -> Module:
    """The module at dotted ``path`` ('' is ``root``)."""
    mod = root
    for part in path.split(".") if path else ():
        child = mod._children.get(part)
        if child is None:
            raise ScellisError(f"no block {path!r} (no child {part!r} under {type(mod).__name__})")
        mod = child
    return mod


def replace_child(root: Module, path: str, new: Module) -> Module:
    """Put ``new`` where the module at ``path`` was; returns the old one.

    Lists of children (ModuleList, Sequential) also keep a plain list for iteration,
    which must see the new module as well.
    """
    if not path:
        raise ScellisError("cannot replace the root module itself")
    parent_path, _, name = path.rpartition(".")
    parent = resolve(root, parent_path)
    old = parent._children.get(name)
    if old is None:
        raise ScellisError(f"no block {path!r}")
    parent._children[name] = new
    if isinstance(parent, ModuleList):
        parent._list[int(name)] = new
    elif name.isdigit() and isinstance(getattr(parent, "layers", None), list):
        parent.layers[int(name)] = new
    else:
        object.__setattr__(parent, name, new)
    return old


def put_param(mod: Module, name: str, t) -> None:
    """Make ``t`` the parameter ``name`` of ``mod`` whatever its ``requires_grad`` (a
    frozen tensor is still a parameter: checkpoints and exports list it)."""
    mod._children.pop(name, None)
    mod._buffers.pop(name, None)
    mod._params[name] = t
    object.__setattr__(mod, name, t)
