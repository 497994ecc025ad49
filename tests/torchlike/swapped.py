"""The torch-style scripts under ``scripts/`` loaded as written (torch) or with only
their imports swapped to Scellis: what the differential suite compares and what
bench/reference_cpu.py times."""

from __future__ import annotations

import builtins
from pathlib import Path

SCRIPTS = Path(__file__).parent / "scripts"
SWAP = {"torch.utils.data": "scellis.data", "torch": "scellis"}


def _swapped_import(name, globals=None, locals=None, fromlist=(), level=0):
    for theirs, ours in SWAP.items():
        if name == theirs or name.startswith(theirs + "."):
            name = ours + name[len(theirs) :]
            break
    return builtins.__import__(name, globals, locals, fromlist, level)


def load_script(name: str, swapped: bool, prefix: str = "script") -> dict:
    """The namespace of ``scripts/NAME.py`` run once, its imports swapped if asked."""
    path = SCRIPTS / f"{name}.py"
    ns: dict = {"__name__": f"{prefix}_{name}", "__file__": str(path)}
    if swapped:
        ns["__builtins__"] = {**vars(builtins), "__import__": _swapped_import}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns
