"""NaN/Inf step skipping: the finite flag and the gated update, without host readbacks."""

import math

import numpy as np
import pytest
from trainutil import count_reads, kinds, task, weights

import scellis as sc
from scellis.train import finite_flag, guarded_step

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on inf * 0


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_finite_flag(device, bad):
    a = sc.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = sc.tensor([[3.0]], device=device, requires_grad=True)
    a.grad, b.grad = sc.tensor([0.5, -1e38], device=device), sc.tensor([[7.0]], device=device)
    assert finite_flag([a, b]).item() is True
    b.grad = sc.tensor([[bad]], device=device)
    assert finite_flag([a, b]).item() is False


def test_guarded_step_keeps_params_and_state(device):
    model, _, opt, _, _ = task(device)
    params = model.parameters()
    for p in params:
        p.grad = p.zeros_like() + 0.1
    guarded_step(opt, finite_flag(params))  # one clean step creates Adam's state
    before = weights(model)
    state = {k: v.tolist() for k, v in opt.state_of(params[0]).items() if k != "step"}
    for p in params:
        p.grad = p.zeros_like() + 0.1
    params[1].grad = params[1].grad * math.inf
    guarded_step(opt, finite_flag(params))
    assert weights(model) == before
    assert {k: v.tolist() for k, v in opt.state_of(params[0]).items() if k != "step"} == state


def _batches(device, bad_at):
    _, _, _, data, _ = task(device)
    out = list(data.batches(0, 0))
    for k in bad_at:
        x, y = out[k]
        out[k] = (x * math.inf, y)  # every activation, the loss and the gradients blow up
    return out


def _run(device, batches, **kw):
    model, loss, opt, _, _ = task(device)
    events = []
    sc.train.run(
        model, loss, opt, batches, epochs=1, determinism_tier="debug", on_event=events.append, **kw
    )
    return events, model, opt


def test_nonfinite_step_is_skipped_on_device(device):
    clean = _batches(device, [])
    faulty = _batches(device, [2])
    ev_a, model_a, opt_a = _run(device, clean[:2], log_every=100)
    with count_reads(device) as reads:
        ev_b, model_b, opt_b = _run(device, faulty[:3], log_every=100)
    assert len(reads) == 1  # the summary; the skip was decided on the device
    assert ev_b[-1]["skipped_total"] == 1 and ev_b[-1]["loss"] == ev_a[-1]["loss"]
    assert weights(model_b) == weights(model_a)
    p_a, p_b = opt_a.param_groups[0]["params"][0], opt_b.param_groups[0]["params"][0]
    assert opt_b.state_of(p_b)["exp_avg"].tolist() == opt_a.state_of(p_a)["exp_avg"].tolist()


def test_skips_are_counted_per_window(device):
    events, model, _ = _run(device, _batches(device, [1, 2, 4]), log_every=3)
    logs = kinds(events, "log")
    assert [(e["skipped"], e["skipped_total"]) for e in logs] == [(2, 2), (1, 3)]
    assert all(np.isfinite(v).all() for v in map(np.asarray, weights(model).values()))
    assert math.isfinite(logs[0]["loss"])  # the mean over the clean steps only


def test_skipping_can_be_turned_off():
    events, model, _ = _run(
        "reference", _batches("reference", [1]), log_every=6, skip_nonfinite=False
    )
    assert not np.isfinite(np.asarray(weights(model)["fc1.weight"])).all()
    assert math.isnan(kinds(events, "log")[0]["loss"])
