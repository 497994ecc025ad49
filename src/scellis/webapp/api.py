"""Everything the worker may call (webapp layer): ``dispatch(cmd, args_json)`` and friends.

The worker sends ``{id, cmd, args}``; ``dispatch`` calls the command ``cmd`` of the
registry (``webapp.commands``: the functions of ``run_api``, ``runs_api``, ``model_api``,
``budget``, ``import_api``, ``use_api``, ``kept_data``, ``share_api`` and ``extension_api``
registered with ``@command``) with the JSON arguments as keywords and returns its value or async
generator. A ScellisError is remembered for ``last_error`` so the page gets its message
and located diagnostics rather than a Python traceback.
"""

from __future__ import annotations

import inspect
import json
import random

from ..base.errors import Diagnostic, ScellisError
from ..devices.base import get_device
from ..version import __version__
from . import (  # noqa: F401 - imported for their @command registrations
    budget,
    extension_api,
    import_api,
    kept_data,
    model_api,
    run_api,
    runs_api,
    session_files,
    share_api,
    tab_store,
    use_api,
)
from . import commands as registry
from .run_api import control, plan, train  # noqa: F401

_last_error: dict | None = None


def _remember(e: ScellisError) -> None:
    global _last_error
    e = session_files.explained(e)  # weights a reload lost: why, not a missing object
    problems = getattr(e, "problems", None) or ([e] if isinstance(e, Diagnostic) else [])
    _last_error = {
        "message": str(e),
        "type": type(e).__name__,
        "diagnostics": [
            {"file": d.file, "line": d.line, "col": d.col, "message": d.message, "fix": d.fix}
            for d in problems
        ],
    }


def last_error() -> dict | None:
    """The last ScellisError a command raised (message, diagnostics), then forgotten."""
    global _last_error
    out, _last_error = _last_error, None
    return out


async def _guarded(agen):
    try:
        async for item in agen:
            yield item
    except ScellisError as e:
        _remember(e)
        raise


async def _guarded_call(coro):
    try:
        return await coro
    except ScellisError as e:
        _remember(e)
        raise


def commands() -> list[str]:
    return registry.names()


def dispatch(cmd: str, args_json: str = "{}"):
    try:
        fn = registry.lookup(cmd).fn
    except ScellisError as e:
        _remember(e)
        raise
    kwargs = json.loads(args_json)
    try:
        inspect.signature(fn).bind(**kwargs)
    except TypeError as e:  # wrong keywords from the page: a bug there, said plainly
        err = ScellisError(f"{cmd}: {e}")
        _remember(err)
        raise err from None
    try:
        out = fn(**kwargs)
    except ScellisError as e:
        _remember(e)
        raise
    if hasattr(out, "__anext__"):
        return _guarded(out)
    return _guarded_call(out) if inspect.iscoroutine(out) else out


def started() -> None:
    """Said by the worker once the engine is imported, before any command. The site build
    may have imported these modules into a memory snapshot that every tab restores, so
    state made at import is the build's: this worker's start time (which tells a dead
    tab's run from a live one) and the shared ``random`` generator's seed are set here."""
    tab_store.opened()
    random.seed()


def hello() -> dict:
    """What the page shows once the engine is up: version, device, adapter."""
    dev = get_device("webgpu")
    info = getattr(dev, "info", None)
    return {
        "version": __version__,
        "device": f"webgpu ({info.name or info.vendor or 'adapter'})" if info else dev.name,
        "adapter": {
            "name": info.name,
            "vendor": info.vendor,
            "backend": info.backend,
            "features": info.features,
            "device_features": info.device_features,  # those the device was opened with
        }
        if info
        else None,
        "commands": commands(),
        # the worker writes the persistent folder back after any other command
        "read_only": registry.read_only(),
    }
