"""scellis.nn, optim and data import and run on the null device with NumPy blocked."""

from __future__ import annotations

import json

from safeutil import BLOCK, run_python

RUN = """
import json, sys
import scellis as sc
from scellis import nn, optim
from scellis.data import DataLoader, TensorDataset

sc.set_default_device("null")
model = nn.Sequential(nn.Linear(1, 4), nn.GELU(), nn.Linear(4, 1))
rnn = nn.LSTM(1, 4, num_layers=2, batch_first=True)
opt = optim.AdamW(model.parameters() + rnn.parameters(), lr=1e-3)
sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
x = sc.zeros((6, 3, 1))
loader = DataLoader(TensorDataset(x), batch_size=4, shuffle=True, seed=1)
shapes = []
for (xb,) in loader:
    out, (h, c) = rnn(xb)
    loss = nn.functional.mse_loss(model(out[:, :, :1]), xb)
    loss.backward()
    opt.step()
    sched.step()
    opt.zero_grad()
    shapes.append([list(out.shape), list(h.shape)])
print(json.dumps({"shapes": shapes, "loaded": sorted(
    m for m in sys.modules if m.split(".")[0] in ("numpy", "wgpu", "torch")
    and sys.modules[m] is not None)}))
"""


def test_nn_optim_data_run_on_null_with_numpy_blocked():
    proc = run_python(BLOCK + RUN)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["shapes"] == [[[4, 3, 4], [2, 4, 4]], [[2, 3, 4], [2, 2, 4]]]
    assert out["loaded"] == []
