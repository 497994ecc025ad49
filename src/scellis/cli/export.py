"""``scellis export FILE|RUN --to torch|torch-train|safetensors|pt|onnx|hf`` (cli layer).

A run reference (``RUN``, ``RUN@STEP``, ``RUN:best``) exports that checkpoint's model. FILE
is a record (``.sml``; its weights are the object its ``# weights: sha256:…``
header names, or ``--weights``, else its own initial values) or any importable file.
``--to torch`` writes a folder with ``model.py`` (a plain PyTorch module, no Scellis
import) and ``state_dict.pt``; ``safetensors`` and ``pt`` write weight files; ``onnx``
an ONNX model (dense and recurrent blocks). ``--to torch-train DIR`` writes a whole
training package (``train.py`` for ``torchrun``, the data pipeline, optimizer, schedule,
loss, clipping, precision); from a run reference it also holds that checkpoint, the
optimizer state included, which ``train.py`` continues from.
``--to hf`` writes a Hugging Face folder (GPT-2, Llama/Qwen2 or BERT layouts) that
``transformers`` loads. A fine-tuned model's LoRA adapters are merged into the weights.

The destination is checked before anything is loaded: an earlier export's file is
replaced only with ``--force``; a FIFO, a device, a folder where a file goes (or a file
where a folder goes) and a symbolic link as the destination or anywhere inside it are
refused. What is written is staged beside the destination and moved into place once
complete, so an interrupted export leaves an earlier one whole (``base.files``).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..codecs.convert import export_file, export_target, write_export
from ..codecs.torchtrain.package import check_package, export_package, run_source, write_package
from ..codecs.weights import state_of
from ..run.reference import looks_like_run, open_run
from .common import extensions_option, load_cli_extensions


@click.command(
    "export", help="Export a record's or a run's model: PyTorch module, safetensors, .pt, ONNX, HF."
)
@click.argument("file", metavar="FILE|RUN[@STEP|:best]")
@click.argument("dest", required=False, type=click.Path())
@click.option(
    "--to",
    "to",
    required=True,
    help="torch | torch-train | safetensors | pt | onnx | hf | a codec id",
)
@click.option("--out", type=click.Path(), help="where to write (default: beside FILE); or DEST")
@click.option("--weights", help="sha256:<hex> in the store, or a weights file")
@click.option("--force", is_flag=True, help="replace an earlier export's files")
@click.option("--store", default=".scellis", show_default=True, help="object store folder")
@extensions_option
@click.option("--json", "json_", is_flag=True, help="machine-readable summary")
def command(file, dest, to, out, weights, force, store, extensions, json_):
    load_cli_extensions(extensions)
    out = out or dest
    if to == "torch-train":
        return _torch_train(file, out, store, weights, force, json_)
    if looks_like_run(store, file):  # RUN, RUN@STEP or RUN:best: that checkpoint's model
        trained = open_run(store, file)
        beside = Path.cwd() / trained.rid.replace("-", "_")
        target = export_target(to, out=out, beside=beside, force=force)  # before the model
        res = write_export(trained.record, state_of(trained.model("reference")), target)
    else:
        res = export_file(file, to, out=out, store=store, weights=weights, force=force)
    files = [str(p) for p in res.written]
    if json_:
        print(json.dumps({"file": file, "codec": res.codec, "written": files}))
        return 0
    print(f"{file}: {res.codec}, {len(res.tensors)} tensors")
    for f in files:
        print(f"  wrote {f}")
    return 0


def _torch_train(file, out, store, weights, force, json_):
    if looks_like_run(store, file):  # that checkpoint, optimizer state included
        trained = open_run(store, file)
        dest = out or trained.rid.replace("-", "_") + "_torch_train"
        check_package(dest, force=force)  # before the checkpoint is read
        source = run_source(store, trained.rid, trained.manifest)
        written = write_package(dest, source, force=force)
    else:
        dest = out or f"{file.removesuffix('.sml')}_torch_train"
        written = export_package(file, dest, store=store, weights=weights, force=force)
    files = [str(p) for p in written]
    if json_:
        print(json.dumps({"file": file, "codec": "torch-train", "written": files}))
        return 0
    print(f"{file}: a PyTorch training package in {dest}")
    for f in files:
        print(f"  wrote {f}")
    print(f"  run: torchrun --nproc_per_node N {dest}/train.py")
    return 0
