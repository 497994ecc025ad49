"""``scellis models save FILE`` and ``models list`` (cli layer): versioned model records.

``save`` validates the record, takes the next version of its ``namespace/name``,
rewrites the record's ``model:`` line to that version (nothing else in the text
changes), stores the text content-addressed and adds the version to the store's
models table, printing the new id. ``scellis train namespace/name@N`` trains it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from ..base.errors import ScellisError
from ..base.files import read_file
from ..sml import parse
from ..store.objects import ObjectStore
from ..store.records import Records

_MODEL_LINE = re.compile(r"^(model:[ \t]*)([\"']?)([^\s\"'@#]+)@([0-9]+)\2", re.MULTILINE)


def save(file: str, store: str, json_: bool) -> int:
    # here, not at the top: checking a record loads the engine, listing models needs none
    from .runner import check_text

    p = Path(file)
    raw = read_file(p)
    check_text(raw, file, p.resolve().parent, trusted=True)
    model = parse(raw, file).data.get("model")
    text = raw.decode("utf-8")
    m = _MODEL_LINE.search(text)
    if not model or m is None or m.group(3) != str(model).rsplit("@", 1)[0]:
        raise ScellisError(
            f"{file}: needs a top-level line `model: namespace/name@N` to version the record"
        )
    name = m.group(3)
    root = Path(store)
    objects, records = ObjectStore(root), Records(root)
    try:
        for _ in range(10):  # another writer may take a version between read and insert
            version = records.next_version(name)
            new = text[: m.start()] + f"{m.group(1)}{m.group(2)}{name}@{version}{m.group(2)}"
            new += text[m.end() :]
            obj = objects.put(new.encode("utf-8"))
            if records.add_model(name, version, obj):
                break
        else:
            raise ScellisError(f"could not take a new version of {name}: the store is busy")
    finally:
        records.close()
    mid = f"{name}@{version}"
    if json_:
        print(json.dumps({"id": mid, "name": name, "version": version, "object": obj}))
    else:
        print(f"saved {mid} (object {obj[:12]}); train it with: scellis train {mid}"
              + ("" if store == ".scellis" else f" --store {store}"))  # fmt: skip
    return 0


def list_models(store: str, json_: bool) -> int:
    root = Path(store)
    if not (root / "records.sqlite").exists():
        rows = []
    else:
        records = Records(root)
        try:
            rows = records.models()
        finally:
            records.close()
    if json_:
        print(json.dumps([{**r, "id": f"{r['name']}@{r['version']}"} for r in rows], indent=2))
        return 0
    if not rows:
        print(f"no models in {store} (scellis models save FILE adds one)")
    for r in rows:
        print(f"{r['name']}@{r['version']}  {r['object'][:12]}")
    return 0


@click.group("models", help="Versioned model records in the store.")
def command():
    pass


@command.command("save", help="Store a record as the next version of its model id.")
@click.argument("file", metavar="FILE")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
def save_cmd(file, store, json_):
    return save(file, store, json_)


@command.command("list", help="The stored model versions.")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
def list_cmd(store, json_):
    return list_models(store, json_)
