"""Run bundles (store layer): one run's rows and objects as a tar file, and back.

A bundle holds ``run.json`` (the run's ``runs`` row, its checkpoints, metrics and
dataset rows, as ``Records.rows_of`` gives them) and ``objects/<sha256>`` for the
run's record text, every checkpoint manifest and the objects each manifest names,
and the run's data files (``store.runfiles``: a CSV or text file loaded in the tab).
Importing writes the objects first (each is re-hashed: a bundle whose file does not
hash to its name is refused), then the rows in one transaction, so a store never names
an object it lacks. A run with data files gets them written back out under
``<store>/files/<run>/`` and that folder as its ``base_dir``, so ``scellis resume``
reads the very bytes it trained on. The tab exports bundles as downloads;
``scellis runs import`` reads them, and so does the tab.
"""

from __future__ import annotations

import io
import json
import tarfile

from ..base.errors import ScellisError
from .manifest import objects_of, read_manifest
from .objects import ObjectStore
from .records import Records
from .runfiles import materialize

FORMAT = "scellis-run-bundle/1"


def export_run(objects: ObjectStore, records: Records, rid: str) -> bytes:
    """The bundle of run ``rid`` (tar bytes)."""
    rows = records.rows_of(rid)
    hashes = [rows["run"]["record_hash"]]
    hashes.extend(sorted(_files_of(rows["run"]).values()))
    for c in rows["checkpoints"]:
        hashes.append(c["manifest"])
        hashes.extend(sorted(objects_of(read_manifest(objects, c["manifest"]))))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        _add(tar, "run.json", json.dumps({"format": FORMAT, **rows}, sort_keys=True).encode())
        for h in dict.fromkeys(hashes):  # in order, once each
            _add(tar, f"objects/{h}", objects.get(h))
    return buf.getvalue()


def import_run(objects: ObjectStore, records: Records, data: bytes) -> str:
    """Add a bundle's run to the store; returns its run id."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except tarfile.TarError as e:
        raise ScellisError(f"not a run bundle (a tar file): {e}") from None
    with tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        if "run.json" not in members:
            raise ScellisError("not a run bundle: it has no run.json")
        try:
            rows = json.loads(tar.extractfile(members["run.json"]).read())
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ScellisError("run bundle: run.json is not JSON") from None
        if rows.get("format") != FORMAT:
            raise ScellisError(f"run bundle format {rows.get('format')!r}; this reads {FORMAT}")
        for name, m in members.items():
            if not name.startswith("objects/"):
                continue
            want = name.split("/", 1)[1]
            got = objects.put(tar.extractfile(m).read())
            if got != want:
                raise ScellisError(f"run bundle: object {want[:12]} hashes to {got[:12]}")
    for c in rows["checkpoints"]:
        read_manifest(objects, c["manifest"])  # present and a manifest, or refused
    run = rows["run"]
    files = _files_of(run)
    if files:
        if not isinstance(run.get("id"), str) or not run["id"].replace("-", "").isalnum():
            raise ScellisError(f"run bundle: bad run id {run.get('id')!r}")
        folder = materialize(objects, files, objects.root / "files" / run["id"])
        config = json.loads(run["config"])
        config["base_dir"] = str(folder.resolve())
        rows = {**rows, "run": {**run, "config": json.dumps(config, sort_keys=True)}}
    records.add_rows(rows)
    return rows["run"]["id"]


def _files_of(run: dict) -> dict[str, str]:
    """The run row's data files ``{source: sha256}`` (its config is JSON text here)."""
    try:
        config = json.loads(run.get("config") or "{}")
    except (TypeError, json.JSONDecodeError):
        raise ScellisError("run bundle: the run's config is not JSON") from None
    files = config.get("files") or {}
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise ScellisError("run bundle: the run's files are not a {source: sha256} map")
    return files


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0  # the same run gives the same bundle bytes
    tar.addfile(info, io.BytesIO(data))
