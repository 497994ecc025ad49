"""A Keras model config as TF.js saves it (codecs layer): layers in order with their inputs.

``modelTopology`` is the Keras config, ``{class_name, config}``, or (from Python's
converter) that under ``model_config``. A ``Sequential`` is a chain, its input shape on
the first layer (``batch_input_shape``) or an ``InputLayer``; a functional ``Model``
(``Functional``) names each layer's inputs in ``inbound_nodes`` (Keras 2's nested lists
or Keras 3's ``keras_history``) and lists ``input_layers`` / ``output_layers``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...base.errors import ScellisError, shown

# the largest Layers models TF.js serves have a few hundred layers; each becomes a block
# of the record, whose text is parsed again to check it (about half a millisecond a
# block), so the count is bounded before anything is built for it
MAX_LAYERS = 2000


@dataclass
class Layer:
    name: str
    kind: str  # the Keras class name: Dense, LSTM...
    config: dict
    inbound: list[str] = field(default_factory=list)  # the layers (or inputs) it reads


@dataclass
class Graph:
    inputs: dict[str, list]  # input name -> batch_input_shape
    layers: list[Layer]  # in an order where every layer's inputs come first
    outputs: list[str]


def named(lay: Layer) -> str:
    """A layer as messages name it: its name and class, each cut short."""
    return f"layer {shown(lay.name)!r} ({shown(lay.kind, 60)})"


def _layers(raw, where: str) -> list:
    if len(raw) > MAX_LAYERS:
        raise ScellisError(f"{where}: {len(raw)} layers; at most {MAX_LAYERS} are read")
    return raw


def _layer(raw, where: str) -> Layer:
    cfg = raw.get("config") if isinstance(raw, dict) else None
    kind = raw.get("class_name") if isinstance(raw, dict) else None
    if not isinstance(cfg, dict) or not isinstance(kind, str):
        raise ScellisError(f"{where}: a layer needs class_name and config")
    name = raw.get("name", cfg.get("name"))
    if not isinstance(name, str) or not name:
        raise ScellisError(f"{where}: a {kind} layer has no name")
    return Layer(name, kind, cfg)


def _input_shape(cfg: dict):
    return cfg.get("batch_input_shape") or cfg.get("batch_shape")


def _sequential(cfg, where: str) -> Graph:
    raw = cfg.get("layers") if isinstance(cfg, dict) else cfg
    if not isinstance(raw, list) or not raw:
        raise ScellisError(f"{where}: a Sequential model needs a list of layers")
    layers = [_layer(r, where) for r in _layers(raw, where)]
    first = layers[0]
    shape = _input_shape(first.config)
    if shape is None:
        raise ScellisError(
            f"{where}: the first layer ({shown(first.name)!r}) has no input shape "
            "(batch_input_shape)"
        )
    source = "input"
    if first.kind == "InputLayer":
        layers, source = layers[1:], first.name
    prev = source
    for lay in layers:
        lay.inbound = [prev]
        prev = lay.name
    return Graph({source: shape}, layers, [prev])


def _ref(entry) -> str:
    """The layer name of one inbound entry: [name, node, tensor, kwargs] or Keras 3's."""
    if isinstance(entry, list):
        return entry[0]
    return entry["config"]["keras_history"][0]


def _inbound(nodes) -> list[str]:
    if not nodes:
        return []
    if len(nodes) != 1:
        raise ValueError("a layer called more than once (shared layers)")
    node = nodes[0]
    refs = node["args"] if isinstance(node, dict) else node
    if isinstance(node, dict) and len(refs) == 1 and isinstance(refs[0], list):
        refs = refs[0]
    names = [_ref(e) for e in refs]
    if not all(isinstance(n, str) for n in names):
        raise ValueError("an inbound entry without a layer name")
    return names


def _functional(cfg, where: str) -> Graph:
    if not isinstance(cfg, dict) or not isinstance(cfg.get("layers"), list):
        raise ScellisError(f"{where}: a functional model needs a list of layers")
    inputs, layers = {}, []
    for raw in _layers(cfg["layers"], where):
        lay = _layer(raw, where)
        if lay.kind == "InputLayer":
            inputs[lay.name] = _input_shape(lay.config)
            continue
        try:
            lay.inbound = _inbound(raw.get("inbound_nodes"))
        except (KeyError, TypeError, IndexError, ValueError, AttributeError) as e:
            raise ScellisError(
                f"{where}: layer {shown(lay.name)!r} has unreadable inbound_nodes "
                f"({shown(str(e), 80)})"
            ) from None
        layers.append(lay)
    outputs = [_ref(o) for o in cfg.get("output_layers") or []]
    if not outputs or not all(isinstance(o, str) for o in outputs):
        raise ScellisError(f"{where}: a functional model needs output_layers")
    return Graph(inputs, _ordered(layers, inputs, where), outputs)


def _ordered(layers: list[Layer], inputs: dict, where: str) -> list[Layer]:
    """Layers so every one comes after what it reads (Keras lists them so; checked), in
    rounds: the layers whose inputs are all known, in the order listed, then those that
    read only those, and so on. Linear in layers plus edges (a round number per layer,
    then one stable sort), so a long model or one listed backwards costs no more."""
    seen = set(inputs)
    for lay in layers:
        if lay.name in seen:  # the graph's edges are by name: a name must be one layer's
            raise ScellisError(f"{where}: two layers are named {shown(lay.name)!r}")
        seen.add(lay.name)
    known = set(inputs)
    waiting = {lay.name: len(set(lay.inbound) - known) for lay in layers}
    readers: dict[str, list[Layer]] = {}
    for lay in layers:
        for src in set(lay.inbound):
            readers.setdefault(src, []).append(lay)
    frontier = [lay for lay in layers if waiting[lay.name] == 0]
    round_of = {lay.name: 0 for lay in frontier}
    at = 0
    while at < len(frontier):  # breadth first: a layer's round is one past its last input's
        lay = frontier[at]
        at += 1
        for reader in readers.get(lay.name, ()):
            waiting[reader.name] -= 1
            if waiting[reader.name] == 0:
                round_of[reader.name] = 1 + max(round_of.get(i, -1) for i in reader.inbound)
                frontier.append(reader)
    if len(round_of) < len(layers):
        lay = next(lay for lay in layers if lay.name not in round_of)
        missing = [i for i in lay.inbound if i not in known and i not in round_of]
        raise ScellisError(
            f"{where}: layer {shown(lay.name)!r} reads {shown(repr(missing), 80)}, which no "
            "layer makes"
        )
    return sorted(layers, key=lambda lay: round_of[lay.name])


def read_graph(topology, where: str) -> Graph:
    """The layers of ``modelTopology`` in order, with the model's inputs and outputs."""
    if isinstance(topology, dict) and "model_config" in topology:
        topology = topology["model_config"]
    if not isinstance(topology, dict):
        raise ScellisError(f"{where}: modelTopology is not a Keras model config")
    kind, cfg = topology.get("class_name"), topology.get("config")
    if kind == "Sequential":
        return _sequential(cfg, where)
    if kind in ("Model", "Functional"):
        return _functional(cfg, where)
    raise ScellisError(
        f"{where}: a {shown(repr(kind), 60)} model; read are Sequential and functional (Model) "
        "Layers "
        "models (a graph model from tf.saved_model is not a Layers model)"
    )
