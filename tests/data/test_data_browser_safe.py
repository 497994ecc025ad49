"""The connectors and user extensions run with NumPy, wgpu and torch blocked (the browser)."""

import subprocess
import sys
from pathlib import Path

import scellis

SRC = str(Path(scellis.__file__).resolve().parent.parent)
EXT = str(Path(__file__).resolve().parent.parent / "catalog" / "user_ext")
CODE = """
import sys
for name in ("numpy", "wgpu", "torch"):
    sys.modules[name] = None
from scellis.catalog import lookup
from scellis.catalog.extensions import load_extensions
from scellis.data import load_data
load_extensions([sys.argv[1]])
assert not lookup("user/optimizer/decay_sgd").builtin
ds = load_data({"source": "bundled:sunspots_yearly.csv", "column": "sunspots", "window": 8})
tx = load_data({"source": "bundled:python_help_topics.txt", "context": 16, "max_chars": 4000})
print(len(ds.x_train) > 0, len(tx.x_train) > 0, len(ds.digest), len(tx.digest))
"""


def test_connectors_and_extensions_without_numpy():
    out = subprocess.run(
        [sys.executable, "-c", CODE, EXT],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "64", "64"]
