"""SML is browser-safe: parse, validate and the projections run with NumPy, wgpu, torch blocked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import scellis

SRC = str(Path(scellis.__file__).resolve().parent.parent)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "char_transformer.sml"

SCRIPT = """
import json, sys
for name in ("numpy", "wgpu", "torch"):
    sys.modules[name] = None  # any import of them now raises ImportError
from scellis.catalog.sml_registry import catalog_registry
from scellis.sml import parse, to_form, to_graph, validate
reg = catalog_registry()
doc = parse(open(sys.argv[1], "rb").read(), sys.argv[1])
doc.set_field("body", "num_layers", 3)
graph = to_graph(doc, reg)
print(json.dumps({"problems": [str(d) for d in validate(doc, reg)], "graph": graph,
                  "form": sorted(to_form(doc, reg)["blocks"])}))
"""


def test_sml_runs_without_numpy():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(EXAMPLE)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC},
        check=True,
    )
    got = json.loads(out.stdout)
    assert got["problems"] == []
    assert got["form"] == ["body", "head", "pos", "tok"]
    assert got["graph"]["nodes"][-1]["out_shape"] == ["batch", 32, 88]
