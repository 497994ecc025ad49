"""Import and export as whole operations (codecs layer): files <-> record + stored weights.

``import_file`` reads any registered format, maps the weights onto a record (the one
the file carries, as ONNX does, or one given, for a bare state dict), and puts them in
the object store as one safetensors object that also carries the record's text; the
record written for the user names that object in its header (``# weights: sha256:…``).
``export_file`` goes the other way, from a record (and its stored weights) or any
importable file, to a registered writer: safetensors, a torch state dict, a plain
PyTorch module, ONNX, or a Hugging Face model folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ScellisError, shown
from ..base.files import StagedOutput, check_destination, check_output, read_file, write_file
from ..model.build import RecordModel
from ..store.objects import ObjectStore
from . import tensor_map
from .base import Codec, Imported, make, read
from .pretrained import finetuned_source
from .raw import RawTensor
from .record import check, record_text
from .safetensors.codec import SafetensorsCodec, SafetensorsConfig, file_tensors
from .tensor_map import TensorMap
from .weights import map_names, state_of

WEIGHTS_TAG = re.compile(r"^#\s*weights:\s*sha256:([0-9a-f]{64})\s*$", re.M)
TARGETS = {"safetensors": "codec/safetensors", "pt": "codec/torch", "torch": "codec/torch_module",
           "onnx": "codec/onnx_export", "hf": "codec/hf"}  # fmt: skip
_DEFAULT_NAME = {"codec/safetensors": "{stem}.safetensors", "codec/torch": "{stem}.pt",
                 "codec/torch_module": "{stem}_torch",
                 "codec/onnx_export": "{stem}.onnx", "codec/hf": "{stem}_hf"}  # fmt: skip


@dataclass
class Result:
    codec: str
    record: dict | None
    text: str | None
    tensors: dict[str, RawTensor]
    weights: str | None = None  # sha256 of the stored safetensors object
    written: list[Path] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


def _read_text(path: Path) -> str:
    try:
        return read_file(path).decode("utf-8")
    except UnicodeDecodeError:
        raise ScellisError(f"{path}: not a text (UTF-8) file") from None


def _written(dest: Path, write) -> list[Path]:
    """``write()``'s result; a folder that cannot be created or written is one line."""
    try:
        return write()
    except OSError as e:
        why = f"{shown(e.filename)}: {e.strerror or e}" if e.filename else f"{e.strerror or e}"
        raise ScellisError(f"{shown(dest)}: cannot write ({why})") from None


def _shapes(record: dict) -> dict[str, tuple]:
    m = RecordModel(record, device="null")
    return {k: tuple(p.shape) for k, p in m.named_parameters()}


def import_file(
    path, *, store: str | Path, record: str | Path | None = None, to: str | Path | None = None,
    name_map: dict[str, str] | TensorMap | None = None, codec: str | None = None,
    strict: bool = True, record_source: tuple[str, str, Path] | None = None,
    bare_only: bool = False, replace: bool = True,
) -> Result:  # fmt: skip
    """Read ``path``, map and store its weights; write the record to ``to`` when given.
    ``record`` (a file) or ``record_source`` ((text, its name, its folder): a run's record)
    is the record the weights are mapped onto; with ``bare_only`` only when the file
    carries no record of its own (a state dict). ``name_map`` renames, or a ``TensorMap``
    also splits and merges tensors first. An existing ``to`` is replaced only with
    ``replace``."""
    path = Path(path)
    if to is not None:
        check_output(to, replace=replace)  # before the weights are stored for it
    im: Imported = read(path, codec)
    rec, where = im.record, str(path)
    own = bare_only and rec is not None  # the file's own record stays
    if record is not None and not own:
        rtext = _read_text(Path(record))
        rec = check(rtext, str(record), Path(record).parent, trusted=True)
        where = str(record)
    elif record_source is not None and not own:
        rtext, where, base = record_source
        rec = check(rtext, where, base)
    tensors, unused = im.tensors, []
    if isinstance(name_map, TensorMap):
        if rec is not None:
            tensors = tensor_map.apply(tensors, name_map)
        name_map = name_map.renames if rec is not None else name_map
    if rec is not None:
        tensors, unused = map_names(tensors, _shapes(rec), name_map, strict=strict)
    elif name_map:
        raise ScellisError("a name map needs a record to map onto (--record)")
    # streamed into the store: a tensor still in the user's file is read at its turn
    sha = ObjectStore(store).put_parts(SafetensorsCodec(SafetensorsConfig()).parts(tensors, rec))
    text = None
    if rec is not None:
        header = (
            f"imported from {path.name} by scellis import ({im.codec}; from {where})\n"
            f"weights: sha256:{sha}"
        )
        if im.metadata.get("tokenizer"):
            header += f"\ntokenizer: {im.metadata['tokenizer']} (a text data section can name it)"
        text = record_text(rec, header)
        check(text, str(to or path))
    res = Result(im.codec, rec, text, tensors, sha, unused=unused)
    if to is not None:
        if text is None:
            raise ScellisError(f"{path}: holds weights only; give --record to write a record")
        out = Path(to)

        def write():
            out.parent.mkdir(parents=True, exist_ok=True)
            write_file(out, text.encode("utf-8"), replace=replace)
            return [out]

        res.written.extend(_written(out, write))
    return res


def header_weights(text: str, store) -> dict[str, RawTensor] | None:
    """The tensors a record's ``# weights: sha256:…`` header names, or None without one."""
    tag = WEIGHTS_TAG.search(text)
    if tag is None:
        return None
    # verified whole, then read tensor by tensor as the model takes them
    path = ObjectStore(store).checked_path(tag.group(1))
    try:
        return file_tensors(path)[0]
    except ScellisError as e:
        raise ScellisError(f"sha256:{tag.group(1)}: {e}") from None


def record_weights(path, store, weights: str | None = None) -> tuple[dict, dict[str, RawTensor]]:
    """(record, weights by parameter path) of a record file: its ``# weights:`` object (or
    ``weights``: sha256:<hex> in ``store`` or a weights file), else its initial values."""
    path = Path(path)
    if path.suffix.lower() != ".sml":
        raise ScellisError(f"{path}: not a record (.sml)")
    rec, tensors = _source(path, store, weights)
    if rec is None:
        raise ScellisError(f"{path}: holds no record")
    return rec, tensors


def _source(path: Path, store, weights: str | None) -> tuple[dict | None, dict[str, RawTensor]]:
    """(record, weights by parameter path) of a record file or of any importable file."""
    if path.suffix.lower() == ".sml":
        text = _read_text(path)
        rec = check(text, str(path), path.parent, trusted=True)
        tag = WEIGHTS_TAG.search(text)
        ref = weights or (f"sha256:{tag.group(1)}" if tag else None)
        if ref is None:  # no weights anywhere: the record's own initial values
            return rec, state_of(RecordModel(rec))
        if ref.startswith("sha256:"):
            blob = ObjectStore(store).get(ref[len("sha256:") :])
            tensors = SafetensorsCodec(SafetensorsConfig()).loads(blob, ref).tensors
        else:
            tensors = read(ref).tensors
        if rec.get("finetune"):
            merged = finetuned_source(rec, tensors)
            if merged is not None:
                return merged
        return rec, map_names(tensors, _shapes(rec))[0]
    im = read(path)
    if weights is not None:
        raise ScellisError("--weights goes with a record (.sml) file")
    rec = im.record
    if rec is not None:
        return rec, map_names(im.tensors, _shapes(rec))[0]
    return None, im.tensors


@dataclass
class Target:
    """Where an export goes, checked before any work is done for it: the writer (a
    codec) and the destination, replaced only when ``replace`` (the user's ``--force``)."""

    cid: str
    codec: Codec
    dest: Path
    replace: bool


def export_target(to: str, *, out=None, beside: Path, force: bool = False) -> Target:
    """The writer ``to`` (safetensors | pt | torch | onnx | hf | a codec id) and its
    destination (``out``, else a name next to ``beside``), refused before any work when
    it cannot be written as ``base.files.check_destination`` says."""
    cid = TARGETS.get(to, to)
    codec = make(cid)
    if not getattr(codec, "can_write", False):
        raise ScellisError(f"{cid} cannot write files")
    dest = Path(out) if out is not None else beside.with_name(
        _DEFAULT_NAME.get(cid, "{stem}.out").format(stem=beside.stem))  # fmt: skip
    check_destination(dest, replace=force, folder=codec.writes_folder, names=codec.folder_files)
    return Target(cid, codec, dest, force)


def export_file(path, to: str, *, out=None, store=".scellis", weights: str | None = None,
                force: bool = False) -> Result:  # fmt: skip
    """Write ``path``'s model with the writer ``to`` (safetensors | pt | torch | a codec
    id); an earlier export is replaced only with ``force``."""
    path = Path(path)
    target = export_target(to, out=out, beside=path, force=force)  # before the model loads
    rec, tensors = _source(path, store, weights)
    return write_export(rec, tensors, target)


def export_tensors(rec: dict | None, tensors: dict, to: str, *, out=None, beside: Path,
                   force: bool = False) -> Result:  # fmt: skip
    """Write a record's model with ``tensors`` with the writer ``to``; by default next to
    ``beside``."""
    return write_export(rec, tensors, export_target(to, out=out, beside=beside, force=force))


def write_export(rec: dict | None, tensors: dict, target: Target) -> Result:
    """Write a record's model with ``tensors`` (by parameter path; a fine-tuned model's
    adapters are merged first) to ``target``: staged beside it and moved into place
    whole (``base.files.StagedOutput``)."""
    if rec is not None and rec.get("finetune"):
        merged = finetuned_source(rec, tensors)
        if merged is not None:
            rec, tensors = merged
    with StagedOutput(target.dest, replace=target.replace) as stage:
        _written(target.dest, lambda: target.codec.write(stage.path, tensors, rec))
    return Result(target.cid, rec, None, tensors, written=stage.written)
