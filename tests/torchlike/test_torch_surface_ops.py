"""torch's tensor methods and free functions beyond the primitives, against torch CPU:
forward values and, where torch differentiates, gradients; a sample on WebGPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tlutil import close, pair

import scellis as sc

pytestmark = pytest.mark.torch


def _grads_match(s_out, t_out, sx, tx, atol=1e-4):
    w = np.random.default_rng(7).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (s_out * sc.tensor(w)).sum().backward()
    (t_out * torch.from_numpy(w)).sum().backward()
    close(sx.grad, tx.grad, atol=atol)


# name -> (call on a tensor or the module, input transform making it valid)
UNARY = {
    "floor": lambda m, x: m.floor(x * 3),
    "ceil": lambda m, x: m.ceil(x * 3),
    "round": lambda m, x: m.round(x * 3),
    "trunc": lambda m, x: m.trunc(x * 3),
    "frac": lambda m, x: m.frac(x * 3),
    "log1p": lambda m, x: m.log1p(x.abs()),
    "expm1": lambda m, x: m.expm1(x),
    "log2": lambda m, x: m.log2(x.abs() + 0.1),
    "log10": lambda m, x: m.log10(x.abs() + 0.1),
    "exp2": lambda m, x: m.exp2(x),
    "sinh": lambda m, x: m.sinh(x),
    "cosh": lambda m, x: m.cosh(x),
    "tan": lambda m, x: m.tan(x * 0.5),
    "atan": lambda m, x: m.atan(x * 3),
    "asin": lambda m, x: m.asin(x.clamp(-0.9, 0.9)),
    "acos": lambda m, x: m.acos(x.clamp(-0.9, 0.9)),
    "reciprocal": lambda m, x: m.reciprocal(x),
    "nan_to_num": lambda m, x: m.nan_to_num(x.log(), nan=0.5, neginf=-3.0),
    "clamp_min": lambda m, x: m.clamp_min(x, 0.1),
    "clip": lambda m, x: m.clip(x, -0.5, 0.5),
    "prod_dim": lambda m, x: m.prod(x, 1),
    "prod_all": lambda m, x: m.prod(x[0]),
    "cumprod": lambda m, x: m.cumprod(x, -1),
    "norm_dim": lambda m, x: m.norm(x, dim=-1),
    "norm_p1_keep": lambda m, x: m.norm(x, p=1, dim=(0, 2), keepdim=True),
    "norm_p3": lambda m, x: m.norm(x, p=3),
    "norm_inf": lambda m, x: m.norm(x, p=float("inf"), dim=1),
    "roll": lambda m, x: m.roll(x, (1, -2), (1, 2)),
    "roll_flat": lambda m, x: m.roll(x, 3),
    "flip": lambda m, x: m.flip(x, (0, -1)),
    "narrow": lambda m, x: m.narrow(x, -1, 1, 3),
    "index_select": lambda m, x: m.index_select(x, 1, m.tensor([2, 0, 2])),
    "unflatten": lambda m, x: x.unflatten(2, (2, 3)),
    "unfold_overlapping": lambda m, x: x.unfold(2, 4, 1) * x.unfold(2, 4, 1),
    "unfold_strided": lambda m, x: x.unfold(-2, 2, 3),
    "unfold_whole_dim": lambda m, x: x.unfold(0, 2, 1).sin(),
    "repeat_interleave_counts": lambda m, x: x.repeat_interleave(m.tensor([2, 0, 1, 3]), dim=1),
    "repeat_interleave_flat": lambda m, x: m.repeat_interleave(x, 2),
    "quantile_dim": lambda m, x: m.quantile(x, m.tensor([0.25, 0.6]), dim=1),
    "quantile_all_keepdim": lambda m, x: x.quantile(0.4, keepdim=True),
    "quantile_midpoint": lambda m, x: x.quantile(0.3, dim=-1, interpolation="midpoint"),
    "fill_diagonal_wrapped": lambda m, x: (x[0].t() * 2).fill_diagonal_(0.5, wrap=True),
    "fill_diagonal_cube": lambda m, x: (x[:, :2, :2].exp() * 1).fill_diagonal_(-1.0),
    "movedim": lambda m, x: m.movedim(x, 0, -1),
    "diagonal": lambda m, x: m.diagonal(x, 1, 1, 2),
    "diag_of_vector": lambda m, x: m.diag(x[0, 0], -1),
    "trace": lambda m, x: m.trace(x[0]),
    "remainder": lambda m, x: m.remainder(x * 4, 1.5),
    "fmod": lambda m, x: m.fmod(x * 4, -1.5),
    "div_floor": lambda m, x: m.div(x * 4, 1.5, rounding_mode="floor"),
    "lerp": lambda m, x: m.lerp(x, x * x, 0.3),
    "addcmul": lambda m, x: m.addcmul(x, x, x, value=0.5),
    "logsumexp_prod": lambda m, x: m.logsumexp(x, -1) * m.prod(x, -1),
    "scatter_add": lambda m, x: m.zeros(2, 4, 6).scatter_add(
        2, m.tensor([[[0, 5, 5, 1, 0, 2]] * 4] * 2), x
    ),
    "index_add": lambda m, x: m.ones(2, 5, 6).index_add(1, m.tensor([4, 0, 4, 1]), x, alpha=2),
    "scatter_value": lambda m, x: x.scatter(2, m.tensor([[[1], [0], [5], [3]]] * 2), 0.25),
    "masked_select": lambda m, x: m.masked_select(x, x > 0.2),
    "std_mean": lambda m, x: m.std_mean(x, 1)[0] + m.var_mean(x, 1)[1],
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_method_matches_torch_values_and_gradients(name):
    fn = UNARY[name]
    sx, tx = pair(2, 4, 6, seed=3, grad=True)
    s_out, t_out = fn(sc, sx), fn(torch, tx)
    assert tuple(s_out.shape) == tuple(t_out.shape)
    close(s_out, t_out, atol=2e-5)
    if t_out.requires_grad:
        _grads_match(s_out, t_out, sx, tx)


@pytest.mark.parametrize("value", [0.5, 1.5, 2.5, -0.5, -2.5, 1e10, 3.7, -3.2])
def test_round_is_half_to_even(value):
    assert sc.tensor([value]).round().tolist() == torch.tensor([value]).round().tolist()


def test_small_value_logs_keep_their_precision():
    v = [1e-9, -1e-7, 1e-3, 3.0]
    np.testing.assert_allclose(sc.tensor(v).log1p().tolist(), torch.tensor(v).log1p(), rtol=1e-6)
    np.testing.assert_allclose(sc.tensor(v).expm1().tolist(), torch.tensor(v).expm1(), rtol=1e-6)


BINARY_FREE = {
    "matmul": lambda m, a, b: m.matmul(a, b.transpose(-1, -2)),
    "outer": lambda m, a, b: m.outer(a[0, 0], b[1, 2]),
    "addmm": lambda m, a, b: m.addmm(a[0, :, :4], a[1], b[0].T, beta=0.5, alpha=2.0),
    "cdist": lambda m, a, b: m.cdist(a[0], b[1]),
    "atan2": lambda m, a, b: m.atan2(a, b),
    "maximum": lambda m, a, b: m.maximum(a, b) + m.minimum(a, b) * 2,
    "hstack_vstack": lambda m, a, b: m.hstack([a[0], b[0]]).sum() + m.vstack([a[1], b[1]]),
    "dot_mv_mm": lambda m, a, b: m.mv(m.mm(a[0], b[0].T), m.dot(a[1, 0], b[1, 0]) * a[0, :, 0]),
    "inner": lambda m, a, b: m.inner(a[0], b[1]),
    "pow_scalar_base": lambda m, a, b: m.pow(2.0, a) + m.pow(a, 2),
    "diff": lambda m, a, b: m.diff(a, dim=1, prepend=b[:, :1]),
    "xlogy": lambda m, a, b: m.xlogy(a, b.abs()),
}


@pytest.mark.parametrize("name", sorted(BINARY_FREE))
def test_free_function_matches_torch(name):
    fn = BINARY_FREE[name]
    sa, ta = pair(2, 4, 6, seed=1, grad=True)
    sb, tb = pair(2, 4, 6, seed=2)
    s_out, t_out = fn(sc, sa, sb), fn(torch, ta, tb)
    close(s_out, t_out, atol=1e-4)
    _grads_match(s_out, t_out, sa, ta, atol=2e-4)


def test_counting_and_searching_functions():
    sx, tx = pair(3, 5, seed=4)
    b = [-1.0, 0.0, 0.5]
    for right in (False, True):
        got = sc.bucketize(sx, sc.tensor(b), right=right).tolist()
        assert got == torch.bucketize(tx, torch.tensor(b), right=right).tolist()
    seq, vals = sc.tensor([[0.0, 1.0, 2.0], [-1.0, 0.5, 3.0]]), sc.tensor([[0.5, 2.0], [3.0, -2.0]])
    want = torch.searchsorted(torch.tensor(seq.tolist()), torch.tensor(vals.tolist()), right=True)
    assert sc.searchsorted(seq, vals, right=True).tolist() == want.tolist()
    ints = [3, 1, 3, 2, 1, 3]
    u, inv, cnt = sc.unique(sc.tensor(ints), return_inverse=True, return_counts=True)
    tu, tinv, tcnt = torch.unique(torch.tensor(ints), return_inverse=True, return_counts=True)
    assert (u.tolist(), inv.tolist(), cnt.tolist()) == (tu.tolist(), tinv.tolist(), tcnt.tolist())
    for args in [(2,), (sc.tensor([1, 0, 2]),)]:
        targs = tuple(torch.tensor(a.tolist()) if isinstance(a, sc.Tensor) else a for a in args)
        got = sc.repeat_interleave(sc.tensor([[1, 2, 3]]), *args, dim=1).tolist()
        assert got == torch.repeat_interleave(torch.tensor([[1, 2, 3]]), *targs, dim=1).tolist()
    assert sc.repeat_interleave(sc.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert sc.nonzero(sx > 0).tolist() == torch.nonzero(tx > 0).tolist()
    assert sc.count_nonzero(sx > 0, dim=0).tolist() == torch.count_nonzero(tx > 0, dim=0).tolist()
    assert (sx > 0).any(1).tolist() == (tx > 0).any(1).tolist()
    assert (sx > -1).all().item() == (tx > -1).all().item()
    assert sc.allclose(sx, sx * (1 + 1e-7)) and not sc.allclose(sx, sx + 1e-3)
    assert torch.allclose(tx, tx * (1 + 1e-7)) and not torch.allclose(tx, tx + 1e-3)
    assert sc.equal(sx, sx.clone()) and not sc.equal(sx, sx[:2])
    assert sc.isclose(sx, sx * 1.001, rtol=1e-2).all().item()


def test_meshgrid_median_and_integer_division():
    a, b = sc.arange(3), sc.arange(4)
    theirs_all = torch.meshgrid(torch.arange(3), torch.arange(4), indexing="xy")
    for ours, theirs in zip(sc.meshgrid(a, b, indexing="xy"), theirs_all):
        assert ours.tolist() == theirs.tolist()
    sx, tx = pair(3, 5, seed=5)
    close(sx.median(), tx.median())
    assert sx.median(1).indices.tolist() == tx.median(1).indices.tolist()
    ints = [7, -7, 5, -3]
    for mode in ("floor", "trunc"):
        got = sc.div(sc.tensor(ints), 2, rounding_mode=mode)
        assert got.tolist() == torch.div(torch.tensor(ints), 2, rounding_mode=mode).tolist()
    assert (sc.tensor(ints) % 3).tolist() == (torch.tensor(ints) % 3).tolist()
    assert sc.fmod(sc.tensor(ints), 3).tolist() == torch.fmod(torch.tensor(ints), 3).tolist()


def test_in_place_spellings_and_random_fills():
    sx, tx = pair(3, 4, seed=6)
    for name, args in [("floor_", ()), ("clamp_min_", (0.2,)), ("abs_", ()), ("mul_", (2,))]:
        getattr(sx, name)(*args)
        getattr(tx, name)(*args)
    close(sx, tx)
    sc.manual_seed(0)
    n = sc.empty(4000).normal_(2.0, 0.5)
    u = sc.empty(4000).uniform_(-1.0, 3.0)
    assert abs(n.mean().item() - 2.0) < 0.05 and abs(n.std().item() - 0.5) < 0.03
    assert -1.0 <= u.min().item() and u.max().item() < 3.0 and abs(u.mean().item() - 1.0) < 0.1
    w = sc.zeros(3, 2, requires_grad=True)
    with sc.no_grad():
        w.uniform_(-0.1, 0.1)
    assert w.requires_grad and w.abs().max().item() <= 0.1 and w.abs().sum().item() > 0


def test_type_names_and_flags():
    x = sc.randn(2, 3)
    assert x.type() == torch.randn(2, 3).type() == "torch.FloatTensor"
    assert x.type(sc.int32).dtype == sc.i32 and x.type("torch.DoubleTensor").dtype == sc.f64
    assert x.is_cuda is False and x.reshape_as(sc.zeros(3, 2)).shape == (3, 2)
    assert sc.inf == torch.inf and sc.pi == torch.pi and sc.e == torch.e and sc.nan != sc.nan
    assert sc.finfo(sc.float32).eps == torch.finfo(torch.float32).eps
    assert sc.iinfo(sc.int32).max == torch.iinfo(torch.int32).max
    assert sc.uint8 == sc.i32 and not hasattr(sc, "bfloat16")
    with pytest.raises(sc.ScellisError, match="float16"):
        sc.bfloat16  # noqa: B018
    with pytest.raises(sc.ScellisError, match="not supported"):
        sc.linalg.inv(x)
    close(sc.linalg.norm(x), torch.linalg.norm(torch.tensor(x.tolist())))


@pytest.mark.parametrize(
    "name", ["floor", "prod_dim", "cumprod", "roll", "diagonal", "atan", "log1p", "norm_p3"]
)
def test_compositions_run_on_webgpu(gpu, name):
    fn = UNARY[name]
    sx, tx = pair(2, 4, 6, seed=3)
    got = fn(sc, sx.to("webgpu"))
    close(got.to("cpu"), fn(torch, tx), atol=2e-5)


MORE_FREE = {
    "tensordot": lambda m, x: m.tensordot(x, x[0].T.contiguous(), dims=1),
    "tensordot_lists": lambda m, x: m.tensordot(x, x, dims=([1, 2], [1, 2])),
    "kron": lambda m, x: m.kron(x[0, :2, :3], x[1, :3, :2]),
    "block_diag": lambda m, x: m.block_diag(x[0, :2, :3], x[1, :1, :2]),
    "cummax": lambda m, x: m.cummax(x, 2).values * 1 + m.cummin(x, 1).values,
    "logcumsumexp": lambda m, x: m.logcumsumexp(x, 1),
    "int_exp_sqrt": lambda m, x: m.exp(m.tensor([1, 2])) + m.sqrt(m.tensor([4, 9])),
    "take_along_sorted": lambda m, x: m.take_along_dim(x, x.argsort(2), 2),
    "take_along_broadcast": lambda m, x: m.take_along_dim(x, x.argmax(1, keepdim=True), 1),
    "take_along_flat": lambda m, x: m.take_along_dim(x, m.tensor([5, 0, 47])),
    "tensor_split_sections": lambda m, x: m.cat(m.tensor_split(x, 4, dim=2)[::-1], 2),
    "tensor_split_indices": lambda m, x: m.tensor_split(x, [1, 3, 9], dim=1)[1] * 2,
    "isin": lambda m, x: m.isin((x * 2).round(), m.tensor([0.0, 1.0, -2.0])).float(),
}


@pytest.mark.parametrize("name", sorted(MORE_FREE))
def test_more_free_functions_match_torch(name):
    fn = MORE_FREE[name]
    sx, tx = pair(2, 4, 6, seed=11, grad=True)
    s_out, t_out = fn(sc, sx), fn(torch, tx)
    close(s_out, t_out, atol=1e-4)
    if t_out.requires_grad:
        _grads_match(s_out, t_out, sx, tx, atol=2e-4)


def test_index_grids_counts_and_draws():
    for f in ("triu_indices", "tril_indices"):
        for offset in (-1, 0, 2):
            assert getattr(sc, f)(3, 4, offset).tolist() == getattr(torch, f)(3, 4, offset).tolist()
    ints = [0, 3, 1, 1, 3, 5]
    assert sc.bincount(sc.tensor(ints)).tolist() == torch.bincount(torch.tensor(ints)).tolist()
    w = [0.5, 1.0, 2.0, 0.25, 1.5, 3.0]
    close(sc.bincount(sc.tensor(ints), sc.tensor(w), minlength=8),
          torch.bincount(torch.tensor(ints), torch.tensor(w), minlength=8))  # fmt: skip
    sx, tx = pair(50, seed=12)
    close(sc.histc(sx, bins=5, min=-1, max=1), torch.histc(tx, bins=5, min=-1, max=1))
    close(sc.logspace(0, 2, 5), torch.logspace(0, 2, 5), atol=1e-4)
    sv, tv = pair(3, 4, seed=13)
    assert sc.cummax(sv, 1).indices.tolist() == torch.cummax(tv, 1).indices.tolist()
    for ours, theirs in zip(sc.where(sv > 0), torch.where(tv > 0)):
        assert ours.tolist() == theirs.tolist()
    sc.manual_seed(2)
    z = sc.normal(sc.full((2000,), 3.0), 0.5)
    assert abs(z.mean().item() - 3.0) < 0.05 and abs(z.std().item() - 0.5) < 0.03
    b = sc.bernoulli(sc.full((2000,), 0.25))
    assert abs(b.mean().item() - 0.25) < 0.04 and set(b.tolist()) == {0.0, 1.0}


def test_process_level_names():
    x = sc.randn(2, 3)
    assert x.size() == sc.Size([2, 3]) == torch.Size([2, 3]) and sc.Size([2, 3]).numel() == 6
    assert sc.FloatTensor([1, 2]).dtype == sc.f32 and sc.LongTensor(2, 3).shape == (2, 3)
    assert x.nelement() == 6 and x.ndimension() == 2 and x.get_device() == -1
    assert x.data_ptr() == x.view(6).data_ptr() != x[1].data_ptr()
    assert x.grad_fn is None and (x.requires_grad_() * 2).grad_fn is not None
    assert sc.tensor([1.0, 2.0]).apply_(lambda v: v * 3).tolist() == [3.0, 6.0]
    assert sc.jit.script(abs) is abs and sc.is_floating_point(x) and sc.dtype is type(sc.f32)
    sc.manual_seed(5)
    state = sc.get_rng_state()
    first = sc.rand(3).tolist()
    sc.set_rng_state(state)
    assert sc.rand(3).tolist() == first and sc.initial_seed() == 5
    for name in ("lgamma", "fft"):
        with pytest.raises(sc.ScellisError, match="use"):
            getattr(sc, name)
    with pytest.raises(sc.ScellisError, match="Adam"):
        sc.optim.SparseAdam  # noqa: B018


@pytest.mark.parametrize("p", [2, 3, "fro"])
def test_norm_of_a_zero_row_has_torch_zero_gradient(p):
    a = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]], np.float32)
    sx, tx = sc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    s_out, t_out = sx.norm(p=p, dim=1), tx.norm(p=p, dim=1)
    close(s_out, t_out)
    _grads_match(s_out, t_out, sx, tx)


@pytest.mark.parametrize("which", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_over_a_dim_sends_the_gradient_to_its_index_among_ties(which, keepdim):
    # ties (ReLU zeros, saturated values) are common; torch's amax shares, max(dim) does not
    a = np.random.default_rng(5).integers(-2, 3, (3, 4, 5)).astype(np.float32)
    got = []
    for lib in (sc, torch):
        x = lib.tensor(a, requires_grad=True)
        values, indices = getattr(x, which)(dim=-2, keepdim=keepdim)
        (values * lib.arange(1.0, 6.0)).sum().backward()
        got.append((values, indices, x.grad))
    (sv, si, sg), (tv, ti, tg) = got
    close(sv, tv)
    assert si.tolist() == ti.tolist()
    close(sg, tg)


PAIRED_WRITES = {
    "one_hot_rows": lambda m, v: ((m.arange(2), m.tensor([3, 0])), 1.0),
    "colon_then_index": lambda m, v: ((slice(None), m.tensor([0, 3])), v[:, :2, :] * 10),
    "int_then_index": lambda m, v: ((1, m.tensor([1, -1])), v[0, :2] * 7),
    "two_indices_rows": lambda m, v: ((m.tensor([0, 1]), m.tensor([2, 2])), v[0, :2] * 3),
    "lists": lambda m, v: (([0, 1], [1, 3], [0, 5]), -2.0),
    "colon_then_pair": lambda m, v: (
        (slice(None), m.tensor([0, 1]), m.tensor([5, 0])),
        v[:, 0, :2],
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRED_WRITES))
def test_assignment_through_several_indices_matches_torch(name):
    got = []
    for lib in (sc, torch):
        x, v = pair(2, 4, 6, seed=8, grad=True)[lib is torch], pair(2, 4, 6, seed=9)[lib is torch]
        y = x * 1.5
        key, value = PAIRED_WRITES[name](lib, v)
        y[key] = value
        (y * y).sum().backward()
        got.append((y, x.grad))
    close(got[0][0], got[1][0])
    close(got[0][1], got[1][1])


def test_squeeze_of_a_dim_not_of_size_one_and_formatting_as_torchs():
    sx, tx = pair(1, 3, 1, seed=2)
    for dims in [0, 1, -1, (0, 1), (1, 2)]:
        assert tuple(sx.squeeze(dims).shape) == tuple(tx.squeeze(dims).shape)
    s, t = sx.sum(), tx.sum()
    assert f"{s:.4f}" == f"{t:.4f}" and f"{s:>9.2e}" == f"{t:>9.2e}"
    with pytest.raises(TypeError):
        f"{sx:.2f}"


CATS = {
    "from_an_empty_accumulator": lambda m: m.cat([m.tensor([]), m.ones(2, 3) * 2]),
    "empty_float_then_ints": lambda m: m.cat([m.tensor([]), m.tensor([1, 2])]),
    "ints_and_floats": lambda m: m.cat([m.tensor([1, 2]), m.tensor([0.5])]),
    "ints_and_bools": lambda m: m.cat([m.tensor([3]), m.tensor([True, False])]),
    "stack_int_and_float": lambda m: m.stack([m.tensor(1), m.tensor(2.5)]),
}


@pytest.mark.parametrize("name", sorted(CATS))
def test_cat_and_stack_promote_and_skip_empty_as_torch(name):
    ours, theirs = CATS[name](sc), CATS[name](torch)
    assert ours.tolist() == theirs.tolist()
    assert ours.dtype.is_float == theirs.dtype.is_floating_point
