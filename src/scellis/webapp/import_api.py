"""The tab's Import model (webapp layer): files a user picked become a record + weights.

The worker writes the picked files (one model file, several files, or a folder's files
with their relative paths) under one fresh folder of Pyodide's file system and calls
``import_model`` with it. The import is ``codecs.convert.import_file``, the one
``scellis import`` runs: an ONNX file, a Hugging Face folder (``config.json``), a TF.js
``model.json`` with its shards, or a state dict (safetensors, ``.pt``) mapped onto the
record the page shows. The weights go into the tab's run store as one object that the
record's ``# weights:`` header names, so a run of that record starts from them (the
run session loads a header's weights, as ``scellis train`` does).

An imported record that lacks an optimizer or a loss gets a default one, said in a
comment, so Train needs only data. ``forward`` runs a record with its header's weights
on given (or sample) inputs: the page's check that the imported model runs on the GPU.
"""

from __future__ import annotations

import random
from pathlib import Path

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..codecs.convert import header_weights, import_file
from ..codecs.pretrained import pretrained_model
from ..devices.base import get_device
from ..runtime.creation import tensor
from ..sml import parse
from ..store.objects import ObjectStore
from . import session_files, tab_store
from .commands import command

# the files that make a folder one model: its codec reads the folder, not one file
FOLDER_MARKERS = ("config.json", "model.json")
DATA_SUFFIXES = (".csv", ".txt", ".tsv")  # what the data panel reads, dropped here by mistake
SAMPLE_BATCH = 1
HEAD = 6  # output values the page's check shows
SAMPLE_LENGTH = 8  # a named dimension other than batch (a sequence left open), in samples


def _files(folder: Path) -> list[Path]:
    """The picked files: regular files only, a link not followed (the model's codec
    judges each file it reads itself; a link here could only lead out)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _model_path(folder: Path) -> Path:
    """The path the import reads: the one file picked, the folder holding the picked
    ``config.json`` (Hugging Face), or the picked ``model.json`` (TF.js)."""
    files = _files(folder)
    if not files:
        raise ScellisError("no files were picked: choose a model file or a model's folder")
    if len(files) == 1 and files[0].suffix.lower() in DATA_SUFFIXES:
        raise ScellisError(
            f"{files[0].name} is data, not a model: load it in the Data panel "
            "(Import model reads .onnx, .safetensors, .pt, model.json or a model's folder)"
        )
    if len(files) == 1 and files[0].name != "config.json":
        return files[0]
    for marker in FOLDER_MARKERS:
        hits = [p for p in files if p.name == marker]
        if len(hits) > 1:
            raise ScellisError(f"{len(hits)} {marker} files picked: pick one model's folder")
        if hits:
            return hits[0].parent if marker == "config.json" else hits[0]
    names = ", ".join(p.name for p in files[:4]) + (" …" if len(files) > 4 else "")
    raise ScellisError(
        f"{len(files)} files picked ({names}) and no config.json (a Hugging Face folder) "
        "or model.json (a TF.js export) among them: pick one model file (.onnx, "
        ".safetensors, .pt) or the whole folder of one model"
    )


def _readable(e: Exception, folder: Path) -> ScellisError:
    """The error with the worker's scratch folder taken out of the paths it names."""
    msg = str(e).replace(f"{folder}/", "").replace(str(folder), "the picked files")
    if not isinstance(e, ScellisError):  # a file no codec's checks foresaw: still one line
        msg = f"could not import the picked files ({type(e).__name__}: {msg})"
    return ScellisError(msg)


def _pipeline(record: dict) -> list[str]:
    """SML lines of a default optimizer and loss, for a record that names none."""
    added = []
    if "optimizer" not in record:
        added.append("optimizer: {block_id: training/optimizer/adam, lr: 0.001}")
    if "loss" not in record:
        outs = record.get("outputs") or []
        lm = bool(outs) and record["blocks"].get(outs[0], {}).get("block_id") == "nn/lm_head"
        added.append(f"loss: {{block_id: training/loss/{'cross_entropy' if lm else 'mse'}}}")
    return added


@command(writes_store=True)
def import_model(folder: str, record_text: str | None = None,
                 store: str = tab_store.ROOT) -> dict:  # fmt: skip
    """Import what the worker wrote under ``folder``; ``record_text`` (the record the page
    shows) is what a bare state dict is mapped onto. Returns ``{record, name, codec,
    tensors, parameters, blocks, added, needs_data, session_only}`` (``session_only``: the
    line saying the weights are kept until the tab closes, or None); refusals are one
    ScellisError."""
    root = Path(folder)
    try:
        path = _model_path(root)
        # a bare state dict is mapped onto the record shown; a model file keeps its own
        source = (record_text, "the record in Model View", root) if record_text else None
        res = import_file(path, store=store, record_source=source, bare_only=True)
    except Exception as e:  # noqa: BLE001 - the page shows one line, never a traceback
        raise _readable(e, root) from None
    if res.text is None:
        raise ScellisError(
            f"{path.name} holds weights only (a state dict): show the model they belong to "
            "in Model View first (an example or an import), then import them onto it"
        )
    # the record names the file as the user picked it, not the worker's scratch folder
    text = res.text.replace(f"{root}/", "").replace(str(root), "the picked files")
    added = _pipeline(res.record)
    if added:  # said in a comment, so the user knows where they came from
        note = "# added by the tab's import (the file names none): edit them in Model View"
        text = text.rstrip("\n") + "\n\n" + "\n".join([note, *added]) + "\n"
    return {
        **_kept_where(store, res.weights, path.name),
        "record": text,
        "name": path.name,
        "codec": res.codec,
        "tensors": len(res.tensors),
        "parameters": sum(t.numel for t in res.tensors.values()),
        "blocks": list(res.record.get("blocks") or {}),
        "added": bool(added),
        "needs_data": "data" not in res.record,
    }


def _kept_where(store: str, sha: str | None, name: str) -> dict:
    """``{"session_only": line}`` when the weights object is too large for browser storage
    (``session_files``): the import's own line tells the user, once; else ``None``."""
    if sha is None:
        return {"session_only": None}
    path = ObjectStore(store).path(sha)
    if not session_files.too_large(path):
        return {"session_only": None}
    # noted beside the store, in the folder the worker writes back (the store's parent)
    note = session_files.keep_here(path, f"the weights of {name}", f"import {name} again",
                                   told=True, root=Path(store).parent)  # fmt: skip
    return {"session_only": session_files.kept_message(note)}


def _sample(spec: dict, record: dict, name: str, rng: random.Random) -> list:
    """Random inputs of one input's shape: token ids below the embedding's size, else
    normal values (batch: SAMPLE_BATCH; another named size: SAMPLE_LENGTH)."""
    dims = [SAMPLE_BATCH if d == "batch" else d if isinstance(d, int) else SAMPLE_LENGTH
            for d in spec.get("shape") or []]  # fmt: skip
    n = 1
    for d in dims:
        n *= d
    if str(spec.get("dtype", "f32")).startswith("i"):
        sizes = [b.get("num_embeddings") for b in record["blocks"].values()
                 if b.get("in") == name and b.get("num_embeddings")]  # fmt: skip
        flat = [rng.randrange(min(sizes or [2])) for _ in range(n)]
    else:
        flat = [rng.gauss(0.0, 1.0) for _ in range(n)]
    return _nest(flat, dims)


def _nest(flat: list, dims: list[int]) -> list:
    if len(dims) <= 1:
        return flat
    step = len(flat) // dims[0]
    return [_nest(flat[i * step : (i + 1) * step], dims[1:]) for i in range(dims[0])]


@command(writes_store=False)
async def forward(record_text: str, inputs: dict | None = None, device: str = "webgpu",
                  store: str = tab_store.ROOT, seed: int = 0,
                  full: bool = False) -> dict:  # fmt: skip
    """The record's outputs with its header's weights on ``inputs`` (by input name;
    random ones from ``seed`` where not given): ``{shape, head}`` (``head``: the first
    values), with ``full`` also ``{inputs, outputs}`` (a language model's logits are
    large: the page's check reads back only their first values)."""
    record = parse(record_text, "model.sml").data
    weights = header_weights(record_text, Path(store))
    dev = get_device(device)
    model = pretrained_model(record, weights, device=dev).eval()
    rng = random.Random(seed)
    specs = record.get("inputs") or {}
    given = {k: inputs[k] if inputs and k in inputs else _sample(s, record, k, rng)
             for k, s in specs.items()}  # fmt: skip
    args = [tensor(given[k], device=dev, dtype=specs[k].get("dtype", "f32")) for k in specs]
    with no_grad():
        out = model(*args)
        head = out.reshape(-1)[:HEAD]
    # read outside no_grad: the worker answers other commands (a memory plan's training
    # trace) while this awaits the GPU, and they must not run with gradients off
    got = {"shape": list(out.shape), "head": await head.read()}
    return {**got, "inputs": given, "outputs": await out.read()} if full else got
