"""The browser-safe core: scellis imports and trains on the null device with NumPy blocked.

Each check runs in a fresh interpreter so this process's ``sys.modules`` stays clean.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import scellis

SRC = str(Path(scellis.__file__).resolve().parent.parent)

BLOCK = """
import sys
for name in ("numpy", "wgpu", "torch"):
    sys.modules[name] = None  # any import of them now raises ImportError
"""

NULL_RUN = """
import json
import sys
import scellis as sc
from scellis import functional as F

x = sc.tensor([[0.5, -1.0, 2.0]] * 4, device="null", requires_grad=True)
w = sc.zeros((3, 5), device="null", requires_grad=True)
b = sc.ones((5,), device="null", requires_grad=True)
t = sc.tensor([0, 1, 2, 3], device="null")
h = (x @ w + b).gelu()
parts = {
    "ce": F.cross_entropy(h, t, label_smoothing=0.1),
    "ln": F.layer_norm(h, 5).sum(),
    "sm": h.softmax(-1)[1:3, ::2].sum(),
    "emb": F.dropout(F.embedding(t, w.T), 0.5).sum(),
    "max": h.max(0).values.sum(),
    "pad": x.pad([1, 0], [0, 2], [0, 1]).sum(),
    "cat": F.stack([x, x * 2.0], 1).var(),
}
loss = sum(parts.values(), sc.zeros((), device="null"))
loss.backward()
try:
    loss.item()
    read = "no error"
except sc.ScellisError as e:
    read = type(e).__name__
print(json.dumps({
    "loss": [list(loss.shape), loss.device.name, str(loss.dtype)],
    "shapes": {k: list(v.shape) for k, v in parts.items()},
    "grads": [list(p.grad.shape) for p in (x, w, b)],
    "emb": list(F.embedding(t, w.T).shape),
    "read": read,
    "loaded": sorted(m for m in sys.modules
                     if m.split(".")[0] in ("numpy", "wgpu", "torch")
                     and sys.modules[m] is not None),
}))
"""


def run_python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_core_runs_on_null_with_numpy_blocked():
    proc = run_python(BLOCK + NULL_RUN)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["loss"] == [[], "null", "f32"]
    assert out["shapes"] == {
        "ce": [],
        "ln": [],
        "sm": [],
        "emb": [],
        "max": [],
        "pad": [],
        "cat": [],
    }
    assert out["grads"] == [[4, 3], [3, 5], [5]]
    assert out["emb"] == [4, 3]
    assert out["read"] == "DeviceError"  # the null device holds no values
    assert out["loaded"] == []


def test_import_loads_no_numpy_even_when_present():
    proc = run_python(NULL_RUN)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["loaded"] == []


def test_reference_device_fails_with_a_scellis_error():
    proc = run_python(
        BLOCK
        + """
import scellis as sc
from scellis.base.errors import DeviceError
for attempt in range(2):  # a failed import must not leave a half-loaded device behind
    try:
        sc.tensor([1.0, 2.0], device="reference")
    except DeviceError as e:
        assert e.__cause__ is None and e.__suppress_context__, "chained ImportError"
        print(type(e).__name__, "|", e)
    else:
        print("created")
"""
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        kind, msg = line.split(" | ")
        assert kind == "DeviceError"
        assert "'reference'" in msg and "numpy" in msg.lower()
    assert "Traceback" not in proc.stderr
