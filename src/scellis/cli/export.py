"""``scellis export FILE --to torch|safetensors|pt|onnx`` (cli layer): a model for other tools.

FILE is a record (``.sml``; its weights are the object its ``# weights: sha256:…``
header names, or ``--weights``, else its own initial values) or any importable file.
``--to torch`` writes a folder with ``model.py`` (a plain PyTorch module, no Scellis
import) and ``state_dict.pt``; ``safetensors`` and ``pt`` write weight files; ``onnx``
an ONNX model (dense and recurrent blocks). ``--to torch-train DIR`` writes a whole
training package (``train.py`` for ``torchrun``, the data pipeline, optimizer, schedule,
loss, clipping, precision); FILE may then also be a run id in ``--store``, whose latest
checkpoint (weights and optimizer state) the package continues from.
"""

from __future__ import annotations

import json

import click

from ..codecs.convert import export_file
from ..codecs.torchtrain.package import export_package
from .common import extensions_option, load_cli_extensions


@click.command("export", help="Export a record's model: a PyTorch module, safetensors, .pt, ONNX.")
@click.argument("file")
@click.argument("dest", required=False, type=click.Path())
@click.option(
    "--to", "to", required=True, help="torch | torch-train | safetensors | pt | onnx | a codec id"
)
@click.option("--out", type=click.Path(), help="where to write (default: beside FILE); or DEST")
@click.option("--weights", help="sha256:<hex> in the store, or a weights file")
@click.option("--store", default=".scellis", show_default=True, help="object store folder")
@extensions_option
@click.option("--json", "json_", is_flag=True, help="machine-readable summary")
def command(file, dest, to, out, weights, store, extensions, json_):
    load_cli_extensions(extensions)
    out = out or dest
    if to == "torch-train":
        return _torch_train(file, out, store, weights, json_)
    res = export_file(file, to, out=out, store=store, weights=weights)
    files = [str(p) for p in res.written]
    if json_:
        print(json.dumps({"file": file, "codec": res.codec, "written": files}))
        return 0
    print(f"{file}: {res.codec}, {len(res.tensors)} tensors")
    for f in files:
        print(f"  wrote {f}")
    return 0


def _torch_train(file, out, store, weights, json_):
    dest = out or f"{file.removesuffix('.sml')}_torch_train"
    files = [str(p) for p in export_package(file, dest, store=store, weights=weights)]
    if json_:
        print(json.dumps({"file": file, "codec": "torch-train", "written": files}))
        return 0
    print(f"{file}: a PyTorch training package in {dest}")
    for f in files:
        print(f"  wrote {f}")
    print(f"  run: torchrun --nproc_per_node N {dest}/train.py")
    return 0
