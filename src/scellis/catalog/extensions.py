"""User catalog extensions (catalog layer): load a user's modules so they register entries.

An extension is a Python module whose top level calls the public
``scellis.catalog.register(...)`` exactly as the built-ins do (``builtin`` stays False).
``load_extensions`` takes dotted module names, ``.py`` files and folders (every ``.py``
file in it, sorted by name). Files are imported from their path under a private module
name; ``sys.path`` is never changed and nothing is unpickled. A failure inside a user
module becomes one ScellisError naming the file and line.

A record names its own extensions in an ``extensions:`` section (paths relative to the
record's folder); ``load_record_extensions`` loads them before the record is validated,
so the entries they register validate, plan, compile and train like built-ins.

Code runs only from what the user names. A record file the user runs directly is the
user's choice (``trusted``); a record that arrives any other way (inside a checkpoint,
a run bundle, an imported file, a stored run or model, the tab) never loads code: its
``extensions:`` section is refused with a message naming ``--extensions``, the way
``trust_remote_code`` works in transformers. Once the user has loaded extensions
themselves (``--extensions``, or ``load_extensions`` from Python), a record whose every
extension they named (by file or folder name, or module name) is validated against what
they loaded; its own list is never run.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from ..base.errors import Diagnostic, ScellisError, shown
from ..sml import Document, validate
from . import registry
from .sml_registry import catalog_registry

# a file is imported once per process: its entries stay registered, a second load is a no-op
_LOADED: dict[str, ModuleType] = {}
# the names of what the user loaded themselves in this process (module names, file and
# folder names): an untrusted record naming only these needs nothing loaded for it
_USER_NAMED: set[str] = set()


def _is_path(spec: str, base_dir=None) -> bool:
    if spec.endswith(".py") or "/" in spec or "\\" in spec or Path(spec).exists():
        return True
    return base_dir is not None and (Path(base_dir) / spec).exists()


def _where(exc: BaseException, files: set[str]) -> tuple[str, int] | None:
    """The innermost traceback frame that lies in one of ``files`` (or a syntax error's spot)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return exc.filename, exc.lineno or 1
    hit = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if str(Path(frame.filename).resolve()) in files:
            hit = (frame.filename, frame.lineno or 1)
    return hit


def _fail(exc: BaseException, files: set[str], fallback: str) -> ScellisError:
    where = _where(exc, files)
    file, line = where if where else (fallback, 1)
    what = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    kind = "" if isinstance(exc, ScellisError) else f"{type(exc).__name__}: "
    return ScellisError(f"{file}:{line}: in catalog extension: {kind}{what}")


def _module_name(path: Path) -> str:
    tag = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return f"scellis_extension_{tag}_{path.stem}"


def _load_file(path: Path) -> ModuleType:
    key = str(path.resolve())
    if key in _LOADED:
        return _LOADED[key]
    name = _module_name(path.resolve())
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ScellisError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve their module through sys.modules while the body runs
    sys.modules[name] = module
    before = set(registry._ENTRIES)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        # all or nothing: a file that fails leaves no entry behind, so a fixed copy loads
        for id in set(registry._ENTRIES) - before:
            del registry._ENTRIES[id]
        sys.modules.pop(name, None)
        raise _fail(e, {key}, str(path)) from None
    _LOADED[key] = module
    return module


def _load_dotted(name: str, base_dir=None) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    try:
        found = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        found = None
    except Exception as e:  # a parent package failed while being imported
        raise _fail(e, set(), name) from None
    if found is None:
        where = "" if base_dir is None else f", nor a file or folder of that name in {base_dir}"
        raise ScellisError(f"no catalog extension module named {name!r}{where}")
    files = {str(Path(found.origin).resolve())} if found.origin else set()
    try:
        return importlib.import_module(name)
    except Exception as e:
        raise _fail(e, files, found.origin or name) from None


def load_extensions(paths_or_modules, base_dir=None) -> list[ModuleType]:
    """Import each extension (a dotted name, a ``.py`` file or a folder of them), in order:
    the user's own choice (``--extensions``, or a call from their script).

    A relative path is taken from ``base_dir`` when given. Returns the modules imported;
    one already loaded is returned again, not re-run.
    """
    if isinstance(paths_or_modules, (str, Path)):
        paths_or_modules = [paths_or_modules]
    paths_or_modules = list(paths_or_modules)
    modules = _import_all(paths_or_modules, base_dir)
    for item in paths_or_modules:
        _USER_NAMED.add(_name_of(item))
    _USER_NAMED.update(Path(m.__file__).name for m in modules if getattr(m, "__file__", None))
    return modules


def _name_of(item) -> str:
    """What an extension is known by: a module's dotted name, a file's or folder's name."""
    text = str(item).replace("\\", "/").rstrip("/")
    return (
        Path(text).name if isinstance(item, Path) or "/" in text or text.endswith(".py") else text
    )


def _import_all(paths_or_modules, base_dir=None) -> list[ModuleType]:
    out = []
    for item in paths_or_modules:
        spec = str(item)
        if not isinstance(item, Path) and not _is_path(spec, base_dir):
            out.append(_load_dotted(spec, base_dir))
            continue
        path = Path(spec)
        relative = base_dir is not None and not path.is_absolute()
        if relative:
            path = Path(base_dir) / path
        if path.is_dir():
            out.extend(_load_file(p) for p in sorted(path.glob("*.py")))
        elif path.is_file():
            out.append(_load_file(path))
        else:
            where = f" (looked for {path.resolve()})" if relative else ""
            raise ScellisError(f"{spec}: no such catalog extension file or folder{where}")
    return out


def _refusal(items: list) -> str:
    names = ", ".join(shown(Path(x).name or x, 30) for x in items[:2] if isinstance(x, str))
    more = f" +{len(items) - 2}" if len(items) > 2 else ""
    return (
        f"--extensions PATH (in the tab: Load extension…) is needed to trust the code this "
        f"record names ({names}{more}): "
        "Scellis never runs code that comes inside a run, checkpoint, bundle or import"
    )


def load_record_extensions(record, base_dir=".", *, trusted: bool = False) -> list[Diagnostic]:
    """Load what a record's ``extensions:`` section names; its problems, [] when all loaded.

    ``record`` is a parsed ``sml.Document`` (each problem is located at its list item) or
    a record dict (problems at line 1 of ``<record>``). Only a ``trusted`` record (a
    file the user runs directly) loads code, relative to ``base_dir``, its folder; any
    other record that names extensions is refused, unless the user loaded extensions of
    their own (see the module note). Call it before validating the record, so the
    entries it registers are known. Loading is idempotent: an extension loaded before
    (by this or by ``--extensions``) is not run again and registers nothing twice.
    Values that are not a list of strings are left to validation, which locates them.
    """
    doc = record if isinstance(record, Document) else None
    data = record.data if doc is not None else record
    items = data.get("extensions") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        return []
    if not trusted:
        unnamed = [x for x in items if not isinstance(x, str) or _name_of(x) not in _USER_NAMED]
        if not unnamed:
            return []  # the user loaded each of them: validation checks the blocks
        msg = _refusal(unnamed)
        return [doc.diag(("extensions",), msg) if doc else Diagnostic(msg, "<record>")]
    out: list[Diagnostic] = []
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            continue
        try:
            _import_all([item], base_dir=base_dir)
        except ScellisError as e:
            msg = str(e)
            out.append(doc.diag(("extensions", i), msg) if doc else Diagnostic(msg, "<record>"))
    return out


def validate_record(doc: Document, base_dir=".", *, trusted: bool = False) -> list[Diagnostic]:
    """Every problem of a parsed record: its extensions are loaded first (a ``trusted``
    record's, relative to ``base_dir``), then it is validated against the catalog. A
    failed extension's problems come alone: the unknown ids it would have registered
    are not news."""
    problems = load_record_extensions(doc, base_dir, trusted=trusted)
    return problems or validate(doc, catalog_registry())
