"""``scellis import FILE`` (cli layer): a model or weights file into a record + stored weights.

The file's codec is found by its bytes, then its suffix (ONNX, safetensors, PyTorch
state dicts, or a user's codec from ``--extensions``); a folder with ``config.json`` is a
Hugging Face model (GPT-2, Llama, Mistral, Qwen2, BERT, RoBERTa, DistilBERT), whose
record is built from its config; a TF.js Layers ``model.json`` (Dense, LSTM, GRU,
Conv1D, Embedding, LayerNormalization, Dropout, Activation) brings its weight shards,
float32 or quantised. ONNX models carry their architecture; a bare state dict maps onto
``--record`` (``--map OLD.=NEW.`` renames prefixes; ``--map w=a,b`` splits a tensor,
``--map a,b=w`` merges: see ``codecs.tensor_map``). The weights go into
the object store (``--store``, default ``.scellis``) as one safetensors object; ``--to``
writes the record, its header naming that object. A refused file (hostile pickle,
unsupported ops, names that do not fit, an unsupported architecture) is exit 2 with the
reason.

A checkpoint of an exported ``train.py`` (``export --to torch-train``) becomes a run in
the store instead, with its optimizer state and step: ``scellis resume RUN`` continues it.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..codecs import tensor_map
from ..codecs.convert import import_file
from ..codecs.torchtrain.checkpoint import is_train_checkpoint
from ..run.reference import looks_like_run, open_run
from ..run.torchtrain import import_checkpoint
from .common import extensions_option, load_cli_extensions


@click.command(
    "import",
    help="Import ONNX / safetensors / PyTorch files, TF.js model.json or Hugging Face folders "
    "as a record + weights.",
)
@click.argument("file", type=click.Path())
@click.option("--to", "to", type=click.Path(dir_okay=False), help="write the record (.sml) here")
@click.option("--force", is_flag=True, help="replace an existing --to file")
@click.option("--store", default=".scellis", show_default=True, help="object store folder")
@click.option("--record", help="map a state dict onto this record (a .sml file or a RUN)")
@click.option("--map", "maps", multiple=True, metavar="OLD=NEW",
              help="rename a name or prefix; split (w=a,b[@AXIS]) or merge (a,b=w); or a file of "
                   "such rules")  # fmt: skip
@click.option("--codec", help="a codec id instead of sniffing (e.g. codec/torch)")
@click.option("--device", default="webgpu", show_default=True,
              help="a train.py checkpoint: the device its run resumes on")  # fmt: skip
@click.option("--base-dir", type=click.Path(file_okay=False),
              help="a train.py checkpoint: where its record's data file is")  # fmt: skip
@extensions_option
@click.option("--json", "json_", is_flag=True, help="machine-readable summary")
def command(file, to, force, store, record, maps, codec, device, base_dir, extensions, json_):
    load_cli_extensions(extensions)
    if codec is None and is_train_checkpoint(file):
        return _train_checkpoint(file, store, device, base_dir, json_)
    run_record = None
    if record is not None and looks_like_run(store, record):  # a run's record: RUN[@STEP]
        trained = open_run(store, record)
        run_record = (trained.record_text.decode("utf-8"), f"run {trained.rid}",
                      Path(trained.config.get("base_dir", ".")))  # fmt: skip
        record = None
    res = import_file(
        file,
        store=store,
        record=record,
        to=to,
        name_map=tensor_map.parse(maps) or None,
        codec=codec,
        record_source=run_record,
        replace=force,
    )
    blocks = list((res.record or {}).get("blocks") or {})
    summary = {
        "file": file,
        "codec": res.codec,
        "weights": f"sha256:{res.weights}",
        "tensors": len(res.tensors),
        "blocks": blocks,
        "record": str(res.written[0]) if res.written else None,
    }
    if json_:
        print(json.dumps(summary))
        return 0
    print(f"{file}: {res.codec}, {len(res.tensors)} tensors -> weights sha256:{res.weights}")
    if blocks:
        print(f"  blocks: {', '.join(blocks)}")
    if res.written:
        print(f"  record: {res.written[0]}")
    return 0


def _train_checkpoint(file, store, device, base_dir, json_):
    argv = ["scellis", "import", file, "--store", str(store)]
    got = import_checkpoint(file, store, device=device, base_dir=base_dir, argv=argv)
    summary = {"file": file, "codec": "torch-train", "run": got.run, "step": got.step,
               "epoch": got.epoch, "manifest": got.manifest, "store": str(store)}  # fmt: skip
    if json_:
        print(json.dumps(summary))
        return 0
    print(f"{file}: a train.py checkpoint at step {got.step} -> run {got.run} in {store}")
    print(f"  continue it: scellis resume {got.run} --store {store}")
    return 0
