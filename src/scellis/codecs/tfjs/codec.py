"""TF.js Layers models as a codec (codecs layer): ``model.json`` + its weight shards in.

Reading builds the record from the Keras config (``topology``), layer by layer
(``layers``), with the weights of the manifest (``manifest``) in torch's layouts. A
layer class without a rule, a weight that does not fit its layer, a missing shard or a
weight no layer takes is refused with the layer's (or weight's) name.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError, shown
from ...base.files import inside, read_file
from ...base.jsontext import load_json
from ...catalog.registry import field, register
from ..base import Codec, Imported
from ..record import check, record_text
from .layers import RULES, Builder, Sym
from .manifest import read_weights
from .topology import Graph, named, read_graph

MAX_JSON = 64 << 20  # model.json is the topology and the manifest: TF.js' are a few MB at most
_MALFORMED = (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError,
              ZeroDivisionError, struct.error)  # fmt: skip


def _input(b: Builder, name: str, shape, where: str) -> Sym:
    ok = (
        isinstance(shape, list)
        and len(shape) >= 2
        and all(d is None or (type(d) is int and d >= 1) for d in shape)
    )
    if not ok:
        raise ScellisError(f"{where}: input {shown(name)!r} has shape {shown(repr(shape), 60)}")
    # a length left open (None) stays open: [batch, time, features] or [batch, dim1, ...]
    named = ["time"] if len(shape) == 3 else [f"dim{i}" for i in range(1, len(shape))]
    dims = [d if d is not None else named[i] for i, d in enumerate(shape[1:])]
    src = b.name(name)
    b.inputs[src] = {"shape": ["batch", *dims], "dtype": "f32"}
    return Sym(src, dims)


def build(graph: Graph, tensors: dict, model: str, where: str) -> tuple[dict, Builder]:
    b = Builder(tensors, where, {lay.name for lay in graph.layers})
    env = {n: _input(b, n, s, where) for n, s in graph.inputs.items()}
    for lay in graph.layers:
        rule = RULES.get(lay.kind)
        if rule is None:
            raise ScellisError(
                f"{where}: layer {shown(lay.name)!r} is a {shown(lay.kind, 60)}, which is not "
                "supported; "
                f"supported: InputLayer, {', '.join(sorted(RULES))}"
            )
        if len(lay.inbound) != 1:
            n = len(lay.inbound)
            raise ScellisError(
                f"{where}: {named(lay)} reads {n} tensors; supported layers read one"
            )
        try:
            env[lay.name] = rule(b, lay, env[lay.inbound[0]])
        except _MALFORMED as e:
            what = f"{type(e).__name__}: {shown(str(e), 80)}"
            raise ScellisError(f"{where}: {named(lay)} is malformed ({what})") from None
    outputs = [env[o].src for o in graph.outputs if o in env]
    if len(outputs) != len(graph.outputs) or any(o in b.inputs for o in outputs):
        raise ScellisError(f"{where}: the model's outputs {graph.outputs} are not layers' outputs")
    left = b.unused()
    if left:
        raise ScellisError(f"{where}: weights no layer takes: {', '.join(left[:8])}")
    rec = {"model": model, "inputs": b.inputs, "blocks": b.blocks, "outputs": outputs,
           "determinism_tier": "debug", "seed": 0}  # fmt: skip
    return rec, b


def model_id(path: Path) -> str:
    stem = path.stem if path.stem != "model" else path.resolve().parent.name
    stem = re.sub(r"[^a-z0-9_.-]", "_", stem.lower()).strip("_.-") or "model"
    return f"imported/{stem if stem[0].isalnum() else 'm' + stem}@1"


@dataclass(frozen=True)
class TfjsConfig:
    """TensorFlow.js Layers models: model.json (Keras config + weights manifest) and shards."""

    max_bytes: int = field(4 << 30, doc="refuse model.json plus shards larger than this", min=1)


class TfjsCodec(Codec):
    suffixes = (".json",)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        h = head.lstrip()
        return h.startswith(b"{") and (b'"modelTopology"' in h or b'"layers-model"' in h)

    @classmethod
    def sniff_dir(cls, path: Path) -> bool:
        return os.path.lexists(path / "model.json") and not os.path.lexists(path / "config.json")

    def read(self, path: Path) -> Imported:
        given = path
        if path.is_dir():  # the folder model.save wrote: its model.json, never a link out
            path = path / "model.json"
            given = inside(path.parent, path.name, str(path))
        where, folder = str(path), path.parent  # every shard is found inside the folder
        data = read_file(given, limit=min(self.config.max_bytes, MAX_JSON))
        doc = load_json(data, where)  # bounded nesting and numbers, one message
        if not isinstance(doc, dict) or "modelTopology" not in doc:
            raise ScellisError(f"{where}: not a TF.js Layers model.json (no modelTopology)")
        if doc.get("format") not in (None, "layers-model"):
            raise ScellisError(
                f"{where}: a TF.js {shown(repr(doc.get('format')), 60)}; read are Layers models "
                "(layers-model)"
            )
        try:
            graph = read_graph(doc["modelTopology"], where)
        except (*_MALFORMED, RecursionError) as e:
            raise ScellisError(f"{where}: unreadable modelTopology ({type(e).__name__})") from None
        budget = max(self.config.max_bytes - len(data), 1)
        try:
            tensors = read_weights(folder, doc.get("weightsManifest"), where, budget)
        except _MALFORMED as e:
            what = f"{type(e).__name__}: {shown(str(e), 80)}"
            raise ScellisError(f"{where}: weightsManifest is malformed ({what})") from None
        rec, built = build(graph, tensors, model_id(path), where)
        producer = shown(str(doc.get("generatedBy") or "TF.js"), 80)  # one short line
        text = record_text(rec, f"imported from {path.name} ({producer})")
        check(text, where)
        return Imported(built.weights, rec, {"sml": text, "producer": producer})


register("codec/tfjs", "codec", TfjsConfig, TfjsCodec, builtin=True)
