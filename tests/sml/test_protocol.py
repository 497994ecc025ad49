"""SML takes any registry: a hand-written one, with no catalog and no shape rule."""

from __future__ import annotations

from scellis.sml import FieldInfo, parse, to_form, to_graph, validate


class TinyRegistry:
    ENTRIES = {
        "my/double": (
            "block",
            [FieldInfo("scale", "float", 2.0, doc="factor", min=0.0, exclusive_min=True)],
        ),  # fmt: skip
        "my/sgd": (
            "optimizer",
            [FieldInfo("lr", "float", required=True, min=0, exclusive_min=True)],
        ),  # fmt: skip
    }

    def ids(self, kind):
        return sorted(k for k, (kd, _) in self.ENTRIES.items() if kd == kind)

    def kind_of(self, id):
        return self.ENTRIES[id][0] if id in self.ENTRIES else None

    def fields(self, id):
        return self.ENTRIES[id][1]

    def doc(self, id):
        return "a tiny entry"


DOC = """\
model: me/tiny@2
inputs: {x: {shape: [batch, 4]}}
blocks:
  d: {block_id: my/double, scale: 3}
optimizer: {block_id: my/sgd, lr: 0.5}
determinism_tier: fast
"""


def test_a_registry_without_shape_rules():
    reg = TinyRegistry()
    doc = parse(DOC, "t.sml")
    assert validate(doc, reg) == []
    assert to_graph(doc, reg)["nodes"][1] == {"id": "d", "block_id": "my/double", "out_shape": None}
    assert to_form(doc, reg)["blocks"]["d"]["fields"][0]["value"] == 3
    bad = parse(DOC.replace("lr: 0.5", "lr: 0").replace("my/double", "my/doubel"), "t.sml")
    got = [str(d) for d in validate(bad, reg)]
    assert got == [
        "t.sml:4:17: unknown block_id 'my/doubel'; did you mean 'my/double'?",
        "t.sml:5:35: lr must be > 0, got 0",
    ]
