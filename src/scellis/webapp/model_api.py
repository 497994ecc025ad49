"""Model View's worker entry points (webapp layer): the three projections and their edits.

The worker calls these by name with keyword arguments; every result is plain JSON
(dicts, lists, strings, numbers). ``project`` turns SML text into its graph, form
and diagnostics; ``edit`` applies one edit through the SML Document (so the user's
comments and formatting survive) and projects the new text. A document that does not
parse still gets a result: its ``line:col`` diagnostic and no graph or form, so the
code view can mark the error in place while the other views keep their last state.
The data panel's entry points (``load_table``, ``load_text``, ``dataset_from``) live
in ``dataset_api``; the worker's command table lists this module's own functions, so
they are answered here through one-line delegates.
"""

from __future__ import annotations

import json
import time

from ..base.errors import Diagnostic, ScellisError
from ..catalog.extensions import load_record_extensions
from ..catalog.registry import lookup as catalog_lookup
from ..catalog.sml_registry import catalog_registry
from ..data.record import BUNDLED
from ..run.effective import set_path
from ..sml import TIERS, Document, parse, to_form, to_graph, validate
from . import data_labels, dataset_api, finetune_edit, kept_data
from .commands import command
from .dataset_api import rehash

__all__ = ["catalog", "dataset_from", "edit", "bundled_files", "follow", "labels", "load_table",
           "load_text", "project", "record_data"]  # fmt: skip

FILE = "model.sml"
# The worker edits one record at a time: the Document of the last text it returned is
# kept, so the next edit of that same text skips a parse, and a text that differs from it
# in one typed value is taken without one (Document.retext). The cache is emptied while a
# call works on it, so a call that fails half-way never leaves a Document behind.
_last: list = [None]


def _doc(text: str, file: str) -> Document:
    doc, _last[0] = _last[0], None
    if doc is None or doc.file != file or not doc.retext(text):
        doc = parse(text, file)
    return doc


class _Schemas:
    """The catalog through SML's registry protocol, each entry's fields read once.

    Reading a config's fields (type hints, metadata) is most of a form's cost; a
    catalog entry never changes once registered (an id cannot be registered twice), so
    its fields are kept per entry object and read again only for a new entry.
    """

    def __init__(self):
        self.inner = catalog_registry()
        self._fields: dict = {}

    def ids(self, kind: str) -> list[str]:
        return self.inner.ids(kind)

    def kind_of(self, id: str) -> str | None:
        try:
            return catalog_lookup(id).kind
        except ScellisError:
            return None

    def fields(self, id: str):
        entry = catalog_lookup(id)
        hit = self._fields.get(id)
        if hit is None or hit[0] is not entry:
            hit = self._fields[id] = (entry, self.inner.fields(id))
        return hit[1]

    def doc(self, id: str) -> str:
        return self.inner.doc(id)

    def multiplicative(self, id: str) -> bool:
        return self.inner.multiplicative(id)

    def multiplicative_parts(self, id: str) -> bool:
        return self.inner.multiplicative_parts(id)

    def infer_shape(self, id: str, fields: dict, inputs: list):
        return self.inner.infer_shape(id, fields, inputs)


_REGISTRY = _Schemas()


def _diag_json(d: Diagnostic) -> dict:
    out = {"file": d.file, "line": d.line, "col": d.col, "message": d.message, "fix": d.fix}
    if getattr(d, "sets", None):  # a certain mend: the page offers it as one click
        out["sets"] = d.sets
    return out


# the record's top-level training scalars the form offers besides the catalog entries
SETTINGS = {
    "epochs": {"type": "int", "min": 1},
    "batch_size": {"type": "int", "min": 1},
    "seed": {"type": "int", "min": 0},
    "determinism_tier": {"type": "str", "choices": list(TIERS)},
}


def _locate(doc: Document, form: dict) -> dict:
    """Give every form entry and field its 1-based line, so the page can put each
    diagnostic next to the field it is about (a field not written in the text points at
    its block)."""
    entries = [(("blocks", n), e) for n, e in form["blocks"].items()]
    entries += [((sec,), e) for sec, e in form["pipeline"].items()]
    for path, entry in entries:
        entry["line"] = doc.where(path, key=True)[0]
        for f in entry["fields"]:
            f["line"] = doc.where(path + (f["name"],))[0] if f["set"] else None
        if "in" in entry:
            entry["in_line"] = doc.where(path + ("in",))[0]
        if path[0] == "blocks":
            # where a shape problem of this block is reported (its in:, else the block),
            # so the page can place the ones it works out itself (model_view/local.js)
            entry["in_at"] = list(doc.where(path + ("in",)))
    form["settings"] = [
        {"name": k, **rule, "value": doc.data.get(k), "line": doc.where((k,))[0]}
        for k, rule in SETTINGS.items()
        if k in doc.data
    ]
    return form


def _project_doc(doc: Document) -> dict:
    reg = _REGISTRY
    # the tab runs no code a record names: such a record is refused here as at Train
    diags = load_record_extensions(doc) or validate(doc, reg)
    return {
        "ok": not diags,
        "parsed": True,
        "text": doc.text,
        "graph": to_graph(doc, reg),
        "form": _locate(doc, to_form(doc, reg)),
        "diagnostics": [_diag_json(d) for d in diags],
        "finetune": finetune_edit.summary(doc.data),
    }


def _out(result: dict, t0: float, encoded: bool):
    result["py_ms"] = (time.perf_counter() - t0) * 1000
    # wall-clock end (ms since the epoch, the page's clock too): the page splits a round
    # trip into the way there, Python, and the way back
    result["py_end"] = time.time() * 1000
    # encoded: one JSON string crosses from Python to the page instead of a tree of
    # values converted one by one (the bigger part of a round trip in Pyodide)
    return json.dumps(result) if encoded else result


@command(writes_store=False)
def project(text: str, file: str = FILE, encoded: bool = False) -> dict | str:
    """``{ok, parsed, text, graph, form, diagnostics, py_ms}`` of one SML text.

    ``parsed`` is False when the text is not a readable document (then ``graph`` and
    ``form`` are None and ``diagnostics`` holds the one parse error). ``py_ms`` is the
    time spent here, so the page can tell Python's share of an edit's latency. With
    ``encoded`` the result is its JSON text.
    """
    t0 = time.perf_counter()
    return _out(_project(text, file), t0, encoded)


def _project(text: str, file: str) -> dict:
    try:
        doc = _doc(text, file)
    except Diagnostic as d:
        return {
            "ok": False,
            "parsed": False,
            "text": text,
            "graph": None,
            "form": None,
            "diagnostics": [_diag_json(d)],
        }
    out = _project_doc(doc)
    _last[0] = doc
    return out


def _need(edit: dict, *keys: str) -> list:
    missing = [k for k in keys if k not in edit]
    if missing:
        raise ScellisError(f"edit {edit.get('kind')!r} needs {', '.join(missing)}")
    return [edit[k] for k in keys]


def _set_field(doc: Document, e: dict) -> None:
    block, field, value = _need(e, "block", "field", "value")
    if block is None:  # a top-level pipeline scalar such as epochs or seed
        doc.set((field,), value)
    else:
        doc.set_field(block, field, value)


def _set_paths(doc: Document, e: dict) -> None:
    # a memory plan's fix: dotted record paths and their values, as ``--set`` takes them
    (edits,) = _need(e, "set")
    if not isinstance(edits, dict) or not edits:
        raise ScellisError("edit 'set_paths' needs set: {dotted.path: value}")
    for path, value in edits.items():
        set_path(doc, tuple(str(path).split(".")), value)


def _add_block(doc: Document, e: dict) -> None:
    name, block_id = _need(e, "name", "block_id")
    doc.add_block(name, block_id, e.get("in"), e.get("after"), **(e.get("fields") or {}))


# one small function per edit kind: the kinds the graph and the form can send
EDITS = {
    "set_field": _set_field,
    "set_paths": _set_paths,
    "add_block": _add_block,
    "remove_block": lambda doc, e: doc.remove_block(*_need(e, "name")),
    "rewire": lambda doc, e: doc.rewire(*_need(e, "block", "in")),
    "rename_block": lambda doc, e: doc.rename_block(*_need(e, "old", "new")),
    "finetune": finetune_edit.apply,  # {method: full|lora|qlora|qlora-int8, rank}
}


@command(writes_store=False)
def edit(text: str, edit: dict, file: str = FILE, encoded: bool = False) -> dict | str:
    """Apply one edit (``{kind, ...}``, kinds in ``EDITS``) and project the new text.

    Raises ScellisError when the text does not parse or the edit cannot apply (an
    unknown block, a name already taken); the text is then unchanged.
    """
    if not isinstance(edit, dict) or edit.get("kind") not in EDITS:
        kind = edit.get("kind") if isinstance(edit, dict) else edit
        raise ScellisError(f"unknown edit {kind!r}; edits are {', '.join(EDITS)}")
    t0 = time.perf_counter()
    doc = _doc(text, file)
    EDITS[edit["kind"]](doc, edit)
    if edit["kind"] == "set_field" and edit.get("block") == "data":
        rehash(doc)
    out = _project_doc(doc)
    _last[0] = doc
    return _out(out, t0, encoded)


@command(writes_store=False)
def catalog(kind: str = "block") -> list[dict]:
    """The entries of one kind, ``[{id, doc, fields}]``, for the add-block menu."""
    reg = _REGISTRY
    return [
        {"id": i, "doc": reg.doc(i), "fields": [f.as_json() for f in reg.fields(i)]}
        for i in reg.ids(kind)
    ]


def bundled_files() -> list[str]:
    """The data files shipped in the package (``bundled:NAME`` sources)."""
    return sorted(p.name for p in BUNDLED.iterdir() if p.suffix != ".md")


@command(writes_store=False)
def load_table(name: str, text: str, column: str | None = None) -> dict:
    """A CSV's columns, their kinds, a preview and a plot series (see dataset_api), with
    ``advice``: the normalisation and season its series suggests, and why."""
    info = dataset_api.load_table(name, text, column)
    info["advice"] = dataset_api.advice_of(name, text, info["series"] and info["series"]["column"])
    return info


@command(writes_store=False)
def data_section(record: str) -> dict:
    """The record's data section (see dataset_api)."""
    return dataset_api.data_section(record)


@command(writes_store=False)
def record_data(record: str) -> dict | None:
    """A preview of the record's own data file (see dataset_api)."""
    return dataset_api.record_data(record)


@command(writes_store=False)
def load_text(name: str, text: str) -> dict:
    """A text file's size, vocabulary and preview (see dataset_api)."""
    return dataset_api.load_text(name, text)


@command(writes_store=True)
def dataset_from(
    record: str,
    name: str,
    text: str,
    column: str | None = None,
    datetime: str | None = None,
    folder: str = "datasets",
    missing: str | None = None,
    options: dict | None = None,
) -> dict:
    """Save the file and pin it, by sha256, in the record's data section (see dataset_api),
    a copy kept across reloads (kept_data); the record's comments that named the data it
    had name the pinned data (data_labels)."""
    before = data_labels.with_counts(
        data_labels.record_labels(record), dataset_api.data_section(record)
    )
    out = dataset_api.dataset_from(record, name, text, column, datetime, folder, missing, options)
    if folder == kept_data.FOLDER:  # the tab's own folder: the file outlives a reload
        kept_data.keep(out["dataset"]["source"])
    after = data_labels.labels(out["dataset"]["data"])
    counted = data_labels.with_counts(after, out["dataset"]["data"])
    text = data_labels.follow_comments(out["record"], before, counted)
    dataset = {**out["dataset"], "labels": after}
    return {"record": text, "dataset": dataset, "project": project(text)}


@command(writes_store=False)
def follow(before: str, text: str) -> dict:
    """The record after a Model View edit of its data section, made to follow it as a
    data-panel change is: ``{text, settled}`` (see ``data_labels.follow_edit``)."""
    return data_labels.follow_edit(before, text)


@command(writes_store=False)
def labels(record: str) -> dict | None:
    """What the tab calls the record's data: target, frequency, file (see data_labels),
    and its window and horizon (the sample chart's title counts them)."""
    return data_labels.with_counts(
        data_labels.record_labels(record), dataset_api.data_section(record)
    )
