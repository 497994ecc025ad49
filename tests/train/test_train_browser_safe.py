"""scellis.train imports with NumPy, wgpu and torch blocked (the browser's situation)."""

import subprocess
import sys
from pathlib import Path

import scellis

SRC = str(Path(scellis.__file__).resolve().parent.parent)
CODE = """
import sys
for name in ("numpy", "wgpu", "torch"):
    sys.modules[name] = None
import scellis.train as t
assert callable(t.fit) and callable(t.run)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "wgpu", "torch")
             and sys.modules[m] is not None))
"""


def test_train_imports_without_numpy():
    out = subprocess.run(
        [sys.executable, "-c", CODE],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
