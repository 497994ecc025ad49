"""Model View's graph and form (sml layer): two JSON projections of one record.

The third projection is the SML text itself (``emit``). Edits made in the graph
(``Document.rewire``, ``add_block``, ``remove_block``, ``rename_block``) and in the
form (``Document.set_field``) go through the same Document methods, so all three
stay one record.
"""

from __future__ import annotations

from .document import Document
from .registry import Registry
from .validate import PIPELINE, infer


def to_graph(doc: Document, registry: Registry) -> dict:
    """``{nodes: [{id, block_id, out_shape}], edges: [{from, to}], outputs: [...]}``.

    Inputs are nodes with ``block_id: "input"``; an out_shape is None where it cannot be
    inferred (an unknown block, or a problem that validate reports).
    """
    shapes, wiring = infer(doc, registry, [])
    inputs = doc.data.get("inputs") if isinstance(doc.data.get("inputs"), dict) else {}
    nodes = [{"id": n, "block_id": "input", "out_shape": shapes.get(n)} for n in inputs]
    edges = []
    for name, spec in doc.blocks.items():
        bid = spec.get("block_id") if isinstance(spec, dict) else None
        nodes.append({"id": name, "block_id": bid, "out_shape": shapes.get(name)})
        edges += [{"from": r, "to": name} for r in wiring.get(name, []) if isinstance(r, str)]
    raw = doc.data.get("outputs")
    outs = list(raw.values()) if isinstance(raw, dict) else raw if isinstance(raw, list) else [raw]
    if raw is None:
        outs = list(doc.blocks)[-1:]
    return {"nodes": nodes, "edges": edges, "outputs": [o for o in outs if isinstance(o, str)]}


def _entry_form(spec, kind: str, registry: Registry) -> dict:
    bid = spec.get("block_id") if isinstance(spec, dict) else None
    if not isinstance(bid, str) or registry.kind_of(bid) != kind:
        return {"block_id": bid, "kind": kind, "doc": "", "fields": [], "error": "unknown block_id"}
    fields = []
    for f in registry.fields(bid):
        row = f.as_json()
        row["value"] = spec.get(f.name, row["default"])
        row["set"] = f.name in spec
        fields.append(row)
    return {"block_id": bid, "kind": kind, "doc": registry.doc(bid), "fields": fields}


def to_form(doc: Document, registry: Registry) -> dict:
    """Per block and per pipeline entry: its fields with type, default, current value,
    range, choices and doc, from the registry's schema."""
    form = {"blocks": {}, "pipeline": {}}
    for name, spec in doc.blocks.items():
        form["blocks"][name] = _entry_form(spec, "block", registry)
        if isinstance(spec, dict) and "in" in spec:
            form["blocks"][name]["in"] = spec["in"]
    for sec, kind in PIPELINE.items():
        if sec in doc.data:
            form["pipeline"][sec] = _entry_form(doc.data[sec], kind, registry)
    return form
