"""Mixed precision: the policy record, f16 compute, dynamic loss scaling, no-f16 adapters."""

import dataclasses
import math

import pytest
from trainutil import kinds, task, train, weights

import scellis as sc
from scellis.devices import get_device
from scellis.train import resolve_precision

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on inf * 0
MIXED = {"policy": "mixed_f16", "master_weights": "f32", "loss_scaling": "dynamic"}


class _NoF16:
    """A device that lacks f16 (what an adapter without shader-f16 reports)."""

    name = "webgpu"

    def supports(self, dtype):
        return dtype.name != "f16"


def test_policy_records():
    ref = get_device("reference")
    assert resolve_precision(None, ref).record()["policy"] == "f32"
    p = resolve_precision(MIXED, ref)
    assert (p.policy, p.init_scale, p.growth_interval, p.backoff_factor) == (
        "mixed_f16",
        65536.0,
        2000,
        0.5,
    )
    assert "emulated" in p.note and p.compute == sc.f16
    assert resolve_precision({"policy": "mixed_f16", "loss_scaling": 128}, ref).init_scale == 128
    for bad in (
        {"policy": "bf16"},
        {"policy": "f32", "master": "f32"},
        {"policy": "mixed_f16", "master_weights": "f16"},
        {"policy": "mixed_f16", "loss_scaling": "auto"},
    ):
        with pytest.raises(sc.ScellisError):
            resolve_precision(bad, ref)


def test_no_f16_refuses_or_falls_back():
    with pytest.raises(sc.ScellisError, match="shader-f16.*fallback: f32"):
        resolve_precision(MIXED, _NoF16())
    p = resolve_precision({**MIXED, "fallback": "f32"}, _NoF16())
    assert (p.policy, p.requested, p.fallback) == ("f32", "mixed_f16", "f32")
    assert "no 'shader-f16'" in p.note and p.compute == sc.f32


class _GPUWithoutF16:
    """The real adapter, with shader-f16 taken out of its feature list."""

    def __init__(self, gpu):
        self._gpu = gpu
        feats = [f for f in gpu.info.features if f != "shader-f16"]
        self.info = dataclasses.replace(gpu.info, features=feats)
        self.limits = gpu.limits

    def __getattr__(self, name):
        return getattr(self._gpu, name)


@pytest.mark.webgpu
def test_webgpu_backend_without_f16():
    from scellis.devices.webgpu import WebGPUBackend

    dev = WebGPUBackend(gpu=_GPUWithoutF16(get_device("webgpu").gpu))
    with pytest.raises(sc.ScellisError, match="adapter .* has no 'shader-f16'"):
        train(dev, precision=MIXED)
    events, _, _ = train(dev, precision={**MIXED, "fallback": "f32"}, log_every=6)
    (warning,) = kinds(events, "warning")
    assert "running in f32" in warning["message"]
    assert events[0]["precision"]["fallback"] == "f32" == events[-1]["precision"]["fallback"]
    logs = kinds(events, "log")
    assert logs[-1]["loss"] < logs[0]["loss"] and logs[-1]["loss_scale"] == 1.0


def test_mixed_runs_f16_matmuls_and_f32_updates(device):
    dev = get_device(device)
    inner, seen = dev.run, set()

    def spy(op, inputs, outputs, attrs):
        seen.add((op, outputs[0].dtype.name))
        return inner(op, inputs, outputs, attrs)

    dev.run = spy
    try:
        events, _, _ = train(device, epochs=10, log_every=6, precision=MIXED)
    finally:
        del dev.run
    assert ("matmul", "f16") in seen and ("matmul", "f32") not in seen
    assert ("adam_update", "f32") in seen
    logs = kinds(events, "log")
    assert logs[-1]["loss"] < 0.5 * logs[0]["loss"]
    assert logs[0]["loss_scale"] == 32768.0 and logs[0]["skipped"] == 1  # 2**16 overflows once


def _batches(device, bad_at):
    _, _, _, data, _ = task(device)
    out = list(data.batches(0, 0))
    for k in bad_at:
        x, y = out[k]
        out[k] = (x, y * 1e30)  # finite f32 targets; the scaled f16 gradient overflows
    return out


def _mixed(device, batches, **prec):
    model, loss, opt, _, _ = task(device)
    events = []
    sc.train.run(
        model,
        loss,
        opt,
        batches,
        epochs=1,
        determinism_tier="debug",
        log_every=1,
        precision={**MIXED, **prec},
        on_event=events.append,
    )
    return kinds(events, "log"), model


def test_overflow_skips_the_step_and_halves_the_scale(device):
    clean, faulty = _batches(device, []), _batches(device, [3])
    logs, model = _mixed(device, faulty[:5], init_scale=1024, growth_interval=2)
    assert [e["loss_scale"] for e in logs] == [1024, 2048, 2048, 1024, 1024]
    assert [e["skipped"] for e in logs] == [0, 0, 0, 1, 0]
    _, before = _mixed(device, clean[:3], init_scale=1024, growth_interval=2)
    _, only_bad = _mixed(device, faulty[:4], init_scale=1024, growth_interval=2)
    assert weights(only_bad) == weights(before)  # the overflowed step changed nothing
    assert math.isfinite(logs[-1]["loss"])
