"""The fused LSTM primitive: reference vs torch.nn.LSTM (f64), WebGPU vs reference."""

import os
import tempfile

import numpy as np
import pytest
import torch

import scellis as sc

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())


def _data(rng, b, t, f, h):
    return {
        "x": rng.standard_normal((b, t, f)),
        "wih": rng.standard_normal((4 * h, f)) * 0.4,
        "whh": rng.standard_normal((4 * h, h)) * 0.4,
        "bih": rng.standard_normal(4 * h) * 0.2,
        "bhh": rng.standard_normal(4 * h) * 0.2,
        "h0": rng.standard_normal((b, h)) * 0.5,
        "c0": rng.standard_normal((b, h)) * 0.5,
    }


def _run(d, device, dtype):
    names = ["x", "wih", "whh", "bih", "bhh", "h0", "c0"]
    t = {k: sc.tensor(d[k], device=device, dtype=dtype, requires_grad=True) for k in names}
    h = d["whh"].shape[1]
    steps = d["x"].shape[1]
    gx = t["x"] @ t["wih"].mT + t["bih"] + t["bhh"]
    y = gx.prim("lstm_seq", t["h0"], t["c0"], t["whh"])
    seq = y[:, :, 0:h].permute(1, 0, 2)
    c_last = y[steps - 1, :, h : 2 * h]
    w = sc.tensor(np.linspace(-1, 1, seq.numel).reshape(seq.shape), device=device, dtype=dtype)
    ((seq * w).sum() + (c_last * c_last).sum()).backward()
    return np.array(seq.tolist()), {k: np.array(v.grad.tolist()) for k, v in t.items()}


def _torch(d):
    b, steps, f = d["x"].shape
    h = d["whh"].shape[1]
    lstm = torch.nn.LSTM(f, h, batch_first=True).double()
    with torch.no_grad():
        for name, key in (
            ("weight_ih_l0", "wih"),
            ("weight_hh_l0", "whh"),
            ("bias_ih_l0", "bih"),
            ("bias_hh_l0", "bhh"),
        ):
            getattr(lstm, name).copy_(torch.tensor(d[key]))
    x = torch.tensor(d["x"], requires_grad=True)
    h0 = torch.tensor(d["h0"][None], requires_grad=True)
    c0 = torch.tensor(d["c0"][None], requires_grad=True)
    seq, (_, c_n) = lstm(x, (h0, c0))
    w = torch.tensor(np.linspace(-1, 1, seq.numel()).reshape(seq.shape))
    ((seq * w).sum() + (c_n[0] ** 2).sum()).backward()
    grads = {
        "x": x.grad,
        "wih": lstm.weight_ih_l0.grad,
        "whh": lstm.weight_hh_l0.grad,
        "bih": lstm.bias_ih_l0.grad,
        "bhh": lstm.bias_hh_l0.grad,
        "h0": h0.grad[0],
        "c0": c0.grad[0],
    }
    return seq.detach().numpy(), {k: v.numpy() for k, v in grads.items()}


@pytest.mark.parametrize("dims", [(1, 1, 1, 1), (3, 5, 4, 6), (2, 9, 3, 17)])
def test_reference_fused_lstm_matches_torch(dims):
    d = _data(np.random.default_rng(sum(dims)), *dims)
    seq, grads = _run(d, "reference", "f64")
    tseq, tgrads = _torch(d)
    np.testing.assert_allclose(seq, tseq, rtol=1e-12, atol=1e-12)
    for k in grads:
        np.testing.assert_allclose(grads[k], tgrads[k], rtol=1e-10, atol=1e-12, err_msg=k)


@pytest.mark.webgpu
@pytest.mark.parametrize("dims", [(1, 1, 1, 1), (3, 5, 4, 6), (2, 7, 3, 33)])
def test_webgpu_fused_lstm_matches_reference(dims):
    d = _data(np.random.default_rng(7 + sum(dims)), *dims)
    d = {k: v.astype(np.float32).astype(np.float64) for k, v in d.items()}
    seq_r, g_r = _run(d, "reference", "f64")
    seq_g, g_g = _run(d, "webgpu", "f32")
    np.testing.assert_allclose(seq_g, seq_r, rtol=1e-5, atol=1e-6)
    for k in g_r:
        np.testing.assert_allclose(g_g[k], g_r[k], rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.webgpu
def test_fused_lstm_dispatches_one_kernel_per_step():
    from scellis.devices import get_device

    gpu = get_device("webgpu")
    rng = np.random.default_rng(0)
    gx = sc.tensor(rng.standard_normal((4, 12, 32)).astype(np.float32), device=gpu)
    h0 = sc.tensor(rng.standard_normal((4, 8)).astype(np.float32), device=gpu)
    w = sc.tensor(rng.standard_normal((32, 8)).astype(np.float32), device=gpu)
    before = gpu.stats["dispatches"]
    gx.prim("lstm_seq", h0, h0, w)
    assert gpu.stats["dispatches"] - before == 12


def _gru_data(rng, b, t, f, h):
    return {
        "x": rng.standard_normal((b, t, f)),
        "wih": rng.standard_normal((3 * h, f)) * 0.4,
        "whh": rng.standard_normal((3 * h, h)) * 0.4,
        "bih": rng.standard_normal(3 * h) * 0.2,
        "bhh": rng.standard_normal(3 * h) * 0.2,
        "h0": rng.standard_normal((b, h)) * 0.5,
    }


def _gru_run(d, device, dtype):
    names = ["x", "wih", "whh", "bih", "bhh", "h0"]
    t = {k: sc.tensor(d[k], device=device, dtype=dtype, requires_grad=True) for k in names}
    h = d["whh"].shape[1]
    gx = t["x"] @ t["wih"].mT + t["bih"]
    seq = gx.prim("gru_seq", t["h0"], t["whh"], t["bhh"])[:, :, 0:h].permute(1, 0, 2)
    w = sc.tensor(np.linspace(-1, 1, seq.numel).reshape(seq.shape), device=device, dtype=dtype)
    ((seq * w).sum() + (seq * seq).sum()).backward()
    return np.array(seq.tolist()), {k: np.array(v.grad.tolist()) for k, v in t.items()}


def _gru_torch(d):
    b, steps, f = d["x"].shape
    h = d["whh"].shape[1]
    gru = torch.nn.GRU(f, h, batch_first=True).double()
    with torch.no_grad():
        for name, key in (
            ("weight_ih_l0", "wih"),
            ("weight_hh_l0", "whh"),
            ("bias_ih_l0", "bih"),
            ("bias_hh_l0", "bhh"),
        ):
            getattr(gru, name).copy_(torch.tensor(d[key]))
    x = torch.tensor(d["x"], requires_grad=True)
    h0 = torch.tensor(d["h0"][None], requires_grad=True)
    seq, _ = gru(x, h0)
    w = torch.tensor(np.linspace(-1, 1, seq.numel()).reshape(seq.shape))
    ((seq * w).sum() + (seq * seq).sum()).backward()
    grads = {
        "x": x.grad,
        "wih": gru.weight_ih_l0.grad,
        "whh": gru.weight_hh_l0.grad,
        "bih": gru.bias_ih_l0.grad,
        "bhh": gru.bias_hh_l0.grad,
        "h0": h0.grad[0],
    }
    return seq.detach().numpy(), {k: v.numpy() for k, v in grads.items()}


@pytest.mark.parametrize("dims", [(1, 1, 1, 1), (3, 5, 4, 6), (2, 9, 3, 17)])
def test_reference_fused_gru_matches_torch(dims):
    d = _gru_data(np.random.default_rng(sum(dims)), *dims)
    seq, grads = _gru_run(d, "reference", "f64")
    tseq, tgrads = _gru_torch(d)
    np.testing.assert_allclose(seq, tseq, rtol=1e-12, atol=1e-12)
    for k in grads:
        np.testing.assert_allclose(grads[k], tgrads[k], rtol=1e-10, atol=1e-12, err_msg=k)


@pytest.mark.webgpu
@pytest.mark.parametrize("dims", [(1, 1, 1, 1), (3, 5, 4, 6), (2, 7, 3, 33)])
def test_webgpu_fused_gru_matches_reference(dims):
    d = _gru_data(np.random.default_rng(11 + sum(dims)), *dims)
    d = {k: v.astype(np.float32).astype(np.float64) for k, v in d.items()}
    seq_r, g_r = _gru_run(d, "reference", "f64")
    seq_g, g_g = _gru_run(d, "webgpu", "f32")
    np.testing.assert_allclose(seq_g, seq_r, rtol=1e-5, atol=1e-6)
    for k in g_r:
        np.testing.assert_allclose(g_g[k], g_r[k], rtol=1e-4, atol=1e-5, err_msg=k)
