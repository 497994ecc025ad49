"""The tab worker's commands (webapp layer): one registry, filled by ``@command``.

A function of the tab API is a command the page may call only when it is registered
here, and its registration says whether it writes the tab's persistent folder (the run
store and the kept data files under ``/scellis``). The worker writes that folder back to
IndexedDB after a command that writes it and skips the write-back (a frame or more)
after one that does not; it learns which are which from ``api.hello()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..base.errors import ScellisError


@dataclass(frozen=True)
class Command:
    name: str
    fn: Callable
    # it may add or change the store's rows and objects or the kept data files; working
    # copies of a run's data files (a store's ``files/``, made again from their objects
    # whenever they are needed) do not count: losing them at a reload loses nothing
    writes_store: bool


_REGISTRY: dict[str, Command] = {}


def command(*, writes_store: bool):
    """Register the decorated function as the worker command of its name. Whether it
    writes the store must be said: a wrong guess either loses a run's rows at a reload
    or costs every call a write-back."""

    def register(fn: Callable) -> Callable:
        known = _REGISTRY.get(fn.__name__)
        if known is not None and known.fn is not fn:
            raise ValueError(f"two worker commands named {fn.__name__!r}")
        _REGISTRY[fn.__name__] = Command(fn.__name__, fn, writes_store)
        return fn

    return register


def lookup(name: str) -> Command:
    """The command ``name``, or one ScellisError naming the known ones."""
    found = _REGISTRY.get(name)
    if found is None:
        raise ScellisError(f"unknown command {name!r}; known: {', '.join(names())}")
    return found


def names() -> list[str]:
    return sorted(_REGISTRY)


def read_only() -> list[str]:
    """The commands that never write the persistent folder."""
    return sorted(n for n, c in _REGISTRY.items() if not c.writes_store)
