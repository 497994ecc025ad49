"""Run bundles (store layer): one run's rows and objects as a tar file, and back.

A bundle holds ``run.json`` (the run's ``runs`` row, its checkpoints, metrics and
dataset rows, as ``Records.rows_of`` gives them) and ``objects/<sha256>`` for the
run's record text, every checkpoint manifest and the objects each manifest names,
and the run's data files (``store.runfiles``: a CSV or text file loaded in the tab).
Importing checks the whole bundle first (``bundle_check``: every row and column; each
object re-hashed against its name; the record, manifests and data files present), then
writes the objects, then the rows in one transaction, so a store never names an object
it lacks and a refused bundle leaves no row. A run with data files gets them written back out under
``<store>/files/<run>/`` and that folder as its ``base_dir``, so ``scellis resume``
reads the very bytes it trained on. The tab exports bundles as downloads;
``scellis runs import`` reads them, and so does the tab.
"""

from __future__ import annotations

import io
import json
import tarfile

from ..base.errors import ScellisError
from .bundle_check import HEX, check_rows, parse
from .manifest import objects_of, parse_manifest, read_manifest
from .objects import ObjectStore, sha256
from .records import Records
from .runfiles import materialize, stored_path

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
    """Add a bundle's run to the store; returns its run id. The whole bundle is checked
    (rows, object hashes, manifests, data files) before anything is written."""
    members = _members(data)
    if "run.json" not in members:
        raise ScellisError("not a run bundle: it has no run.json")
    rows = check_rows(parse(members.pop("run.json")), FORMAT)
    blobs = {}
    for name, blob in members.items():
        want = name.split("/", 1)[1] if name.startswith("objects/") else ""
        if not HEX.match(want):
            raise ScellisError(f"run bundle: unexpected member {name!r:.80}")
        got = sha256(blob)
        if got != want:
            raise ScellisError(f"run bundle: object {want[:12]} hashes to {got[:12]}")
        blobs[want] = blob
    run = rows["run"]
    files = _files_of(run)
    for what, h in [("the record", run["record_hash"])] + [
        (f"data file {s}", h) for s, h in files.items()
    ]:
        if not HEX.match(h):
            raise ScellisError(f"run bundle: {what} is named by {h!r:.80}, not a hash")
        _need(objects, blobs, h, what)
    for source, h in files.items():
        stored_path(source, h)  # a name that cannot be written back out is refused now
    for c in rows["checkpoints"]:
        h = c["manifest"]
        m = parse_manifest(_need(objects, blobs, h, f"checkpoint {c['step']}"), h)
        for h2 in sorted(objects_of(m)):
            _need(objects, blobs, h2, f"checkpoint {c['step']}")
    # all checked: objects first (a row never names an object the store lacks), then rows.
    # put() verifies a copy already stored and writes a corrupt one fresh: importing a
    # run's bundle again repairs its objects even when its rows are there already
    before = {h: (objects.has(h), len(objects.quarantined(h))) for h in blobs}
    for blob in blobs.values():
        objects.put(blob)
    if records.has_run(run["id"]):
        fixed = sum(
            1
            for h, (had, q) in before.items()
            if (q and not had) or len(objects.quarantined(h)) > q
        )
        note = f"; {fixed} corrupt object(s) of it were replaced from the bundle" if fixed else ""
        raise ScellisError(f"run {run['id']} is already in {records.root}{note}")
    if files:
        folder = materialize(objects, files, objects.root / "files" / run["id"])
        config = json.loads(run["config"])
        config["base_dir"] = str(folder.resolve())
        rows = {**rows, "run": {**run, "config": json.dumps(config, sort_keys=True)}}
    records.add_rows(rows)
    return rows["run"]["id"]


def _members(data: bytes) -> dict[str, bytes]:
    """The bundle's files by name: a plain tar, no name twice, nothing but files."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            out: dict[str, bytes] = {}
            for m in tar:
                if m.isdir():
                    continue
                if not m.isfile() or m.issparse():
                    raise ScellisError(f"run bundle: member {m.name!r:.80} is not a plain file")
                if m.name in out:
                    raise ScellisError(f"run bundle: member {m.name!r:.80} appears twice")
                out[m.name] = tar.extractfile(m).read()
                if len(out[m.name]) != m.size:
                    raise ScellisError(f"run bundle: member {m.name!r:.80} is cut short")
            return out
    except ScellisError:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError, UnicodeError) as e:
        raise ScellisError(f"not a run bundle (a tar file): {e}") from None


def _need(objects: ObjectStore, blobs: dict, h: str, what: str) -> bytes:
    if h in blobs:
        return blobs[h]
    if objects.has(h):
        return objects.get(h)
    raise ScellisError(f"run bundle: {what} names object {h[:12]}, which it lacks")


def _files_of(run: dict) -> dict[str, str]:
    """The run row's data files ``{source: sha256}`` (its config is JSON text here)."""
    try:
        config = json.loads(run.get("config") or "{}")
    except (TypeError, json.JSONDecodeError):
        raise ScellisError("run bundle: the run's config is not JSON") from None
    if not isinstance(config, dict):
        raise ScellisError("run bundle: the run's config is not a JSON object")
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
