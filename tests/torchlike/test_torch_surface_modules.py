"""torch's module-level surface against torch CPU: distributions, optimizers, schedulers,
data utilities, ``testing.assert_close``, ``utils.checkpoint`` and the settings."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as TD
from tlutil import close, pair

import scellis as sc
import scellis.utils.data as SD

pytestmark = pytest.mark.torch


# -- distributions: log_prob, entropy, KL and rsample's gradient --
def test_normal_log_prob_entropy_kl_and_rsample_gradient():
    (sl, tl), (ss, ts) = pair(3, 4, seed=1, grad=True), pair(3, 4, seed=2)
    ss, ts = ss.abs() + 0.1, ts.abs() + 0.1
    (sv, tv) = pair(3, 4, seed=3)
    s, t = sc.distributions.Normal(sl, ss), torch.distributions.Normal(tl, ts)
    close(s.log_prob(sv), t.log_prob(tv))
    close(s.entropy(), t.entropy())
    q_s, q_t = (
        sc.distributions.Normal(sl * 0.5, ss * 2),
        torch.distributions.Normal(tl * 0.5, ts * 2),
    )
    close(sc.distributions.kl_divergence(s, q_s), torch.distributions.kl_divergence(t, q_t))
    draw = s.rsample((2,))
    assert tuple(draw.shape) == (2, 3, 4)
    draw.sum().backward()  # d(loc + eps * scale)/d loc = 1 per draw
    close(sl.grad, torch.full((3, 4), 2.0))


@pytest.mark.parametrize("use_logits", [False, True])
def test_categorical_and_bernoulli_match_torch(use_logits):
    sx, tx = pair(5, 4, seed=4)
    kw_s = {"logits": sx} if use_logits else {"probs": sx.abs()}
    kw_t = {"logits": tx} if use_logits else {"probs": tx.abs()}
    s, t = sc.distributions.Categorical(**kw_s), torch.distributions.Categorical(**kw_t)
    labels = [0, 3, 1, 1, 2]
    close(s.log_prob(sc.tensor(labels)), t.log_prob(torch.tensor(labels)))
    close(s.entropy(), t.entropy())
    sc.manual_seed(0)
    draws = s.sample((200,))
    assert tuple(draws.shape) == (200, 5) and 0 <= draws.min().item() and draws.max().item() <= 3
    b_s = sc.distributions.Bernoulli(**({"logits": sx} if use_logits else {"probs": sx.sigmoid()}))
    b_t = torch.distributions.Bernoulli(
        **({"logits": tx} if use_logits else {"probs": tx.sigmoid()})
    )
    v = (sx > 0).float()
    close(b_s.log_prob(v), b_t.log_prob((tx > 0).float()))
    close(b_s.entropy(), b_t.entropy())
    with pytest.raises(sc.ScellisError, match="rsample"):
        s.rsample()


def test_sampled_frequencies_follow_the_probabilities():
    sc.manual_seed(1)
    probs = [0.1, 0.6, 0.3]
    draws = sc.distributions.Categorical(probs=sc.tensor(probs)).sample((3000,)).tolist()
    freq = [draws.count(k) / 3000 for k in range(3)]
    np.testing.assert_allclose(freq, probs, atol=0.03)


# -- optimizers: parameters after a few steps, against torch's --
OPTIMIZERS = {
    "Adadelta": dict(lr=0.5, rho=0.8, weight_decay=0.01),
    "Adamax": dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.01),
    "Adamax_max": dict(lr=0.05, maximize=True),
    "RMSprop": dict(lr=0.01, momentum=0.9, centered=True),
    "Adagrad": dict(lr=0.1, lr_decay=0.01),
    "SGD": dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "SGD_nesterov": dict(lr=0.1, momentum=0.9, nesterov=True),
    "Adam": dict(lr=0.01, amsgrad=True),
    "Adam_max": dict(lr=0.01, maximize=True, weight_decay=0.1),
    "SGD_max": dict(lr=0.05, momentum=0.5, maximize=True),
    "Adadelta_max": dict(maximize=True),
    "RMSprop_plain": dict(lr=0.01, alpha=0.9, weight_decay=0.05),
    "NAdam": dict(lr=0.01),
    "RAdam": dict(lr=0.01),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_match_torch(name):
    cls, kw = name.split("_")[0], OPTIMIZERS[name]
    sp, tp = pair(3, 4, seed=5, grad=True)
    so, to = getattr(sc.optim, cls)([sp], **kw), getattr(torch.optim, cls)([tp], **kw)
    for step in range(4):
        for p, o in ((sp, so), (tp, to)):
            o.zero_grad()
            (p * p * p).sum().backward() if step % 2 else (p.sin() * 3).sum().backward()
            o.step()
    close(sp, tp, atol=1e-5)


def test_elementwise_optimizer_state_round_trip_and_groups():
    sp, _ = pair(4, seed=6, grad=True)
    sq, _ = pair(2, seed=7, grad=True)
    opt = sc.optim.Adamax([{"params": [sp]}, {"params": [sq], "lr": 0.5}], lr=0.1)
    (sp.square().sum() + sq.sum()).backward()
    opt.step()
    sd = opt.state_dict()
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["state"][0]["step"] == 1
    other = sc.optim.Adamax([{"params": [sp]}, {"params": [sq], "lr": 0.5}], lr=0.1)
    other.load_state_dict(sd)
    close(other.state[sp]["exp_inf"], torch.tensor(opt.state[sp]["exp_inf"].tolist()))
    opt.zero_grad(set_to_none=True)
    assert sp.grad is None and sq.grad is None


# -- schedulers: the rates torch's give, step for step --
SCHEDULERS = {
    "MultiStepLR": dict(milestones=[2, 5], gamma=0.5),
    "PolynomialLR": dict(total_iters=6, power=2.0),
    "CosineAnnealingWarmRestarts": dict(T_0=3, T_mult=2, eta_min=0.01),
    "CyclicLR": dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
    "CyclicLR_exp": dict(
        base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=3, mode="exp_range", gamma=0.9
    ),  # fmt: skip
    "ConstantLR": dict(factor=0.5, total_iters=3),
    "StepLR": dict(step_size=2, gamma=0.3),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_scheduler_rates_and_momenta_match_torch(name):
    cls, kw = name.split("_")[0], SCHEDULERS[name]
    sp, tp = pair(2, seed=8, grad=True)
    so = sc.optim.SGD([sp], lr=0.1, momentum=0.9)
    to = torch.optim.SGD([tp], lr=0.1, momentum=0.9)
    ss = getattr(sc.optim.lr_scheduler, cls)(so, **kw)
    ts = getattr(torch.optim.lr_scheduler, cls)(to, **kw)
    for _ in range(12):
        assert ss.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-9)
        assert so.param_groups[0]["momentum"] == pytest.approx(to.param_groups[0]["momentum"])
        so.step(), to.step()
        ss.step(), ts.step()
    assert ss.last_epoch == ts.last_epoch
    assert ss.state_dict()["last_epoch"] == ts.state_dict()["last_epoch"]


# -- data: torch.utils.data's shapes --
class _Squares(SD.Dataset):
    def __init__(self, n, offset=0):
        self.n, self.offset = n, offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        v = float(i + self.offset)
        return {"x": np.array([v, v * v], np.float32), "y": i % 3, "name": f"r{i}"}


def test_collate_concat_subset_and_batch_sampler_match_torch():
    ours = SD.ConcatDataset([_Squares(5), _Squares(4, 10)])
    theirs = TD.ConcatDataset([_Squares(5), _Squares(4, 10)])
    assert len(ours) == len(theirs) == 9 and ours[6]["y"] == theirs[6]["y"]
    sampler = SD.BatchSampler(SD.SequentialSampler(ours), 4, drop_last=False)
    t_sampler = TD.BatchSampler(TD.SequentialSampler(theirs), 4, drop_last=False)
    assert list(sampler) == list(t_sampler)
    for got, want in zip(SD.DataLoader(ours, batch_sampler=sampler),
                         TD.DataLoader(theirs, batch_sampler=t_sampler)):  # fmt: skip
        close(got["x"], want["x"])
        assert got["y"].tolist() == want["y"].tolist() and got["name"] == want["name"]
    loader = SD.DataLoader(_Squares(10) + _Squares(3), batch_size=4, shuffle=True, drop_last=True)
    rows = [b["y"].shape[0] for b in loader]
    assert rows == [4, 4, 4] and len(loader) == 3


class _Rows(list):
    """Items of (NumPy row, int label, name, namedtuple of a float) through __getitem__."""

    def __getitem__(self, i):
        x = np.array([i, i * 0.5], np.float32) + 0.25
        return x, i % 2, f"r{i}", _Pt(x.sum(), np.float32(i))


_Pt = collections.namedtuple("_Pt", "total index")


def _shape_of(batch):
    """Containers and their kinds, tensors as (shape, values): what a script unpacks."""
    if hasattr(batch, "tolist") and hasattr(batch, "shape"):
        return ("tensor", tuple(batch.shape), np.round(np.asarray(batch.tolist()), 5).tolist())
    if isinstance(batch, (list, tuple)):
        kind = type(batch).__name__ if not hasattr(batch, "_fields") else "namedtuple"
        return (kind, [_shape_of(b) for b in batch])
    return batch


@pytest.mark.parametrize("batch_size", [3, None])
def test_batches_and_unbatched_items_have_torchs_containers(batch_size):
    ours = list(SD.DataLoader(_Rows(range(5)), batch_size=batch_size))
    theirs = list(TD.DataLoader(_Rows(range(5)), batch_size=batch_size))
    assert [_shape_of(b) for b in ours] == [_shape_of(b) for b in theirs]
    assert len(SD.DataLoader(_Rows(range(5)), batch_size=batch_size)) == len(theirs)


def test_random_split_samplers_and_iterable_datasets():
    parts = SD.random_split(_Squares(10), [0.7, 0.3], generator=sc.Generator().manual_seed(3))
    assert [len(p) for p in parts] == [7, 3]
    seen = sorted(p.indices[i] for p in parts for i in range(len(p)))
    assert seen == list(range(10))
    perm = list(SD.RandomSampler(range(6), generator=sc.Generator().manual_seed(1)))
    assert sorted(perm) == list(range(6))
    picks = list(SD.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 400))
    assert set(picks) <= {1, 3} and 0.65 < picks.count(3) / 400 < 0.85
    assert sorted(SD.SubsetRandomSampler([2, 5, 7])) == [2, 5, 7]

    class Stream(SD.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in SD.DataLoader(Stream(), batch_size=3)] == [
        [0, 1, 2],
        [3, 4, 5],
        [6],
    ]
    assert SD.get_worker_info() is None and sc.utils.data.DataLoader is sc.data.DataLoader


# -- testing, checkpoint, settings, load --
def test_assert_close_passes_and_fails_like_torch():
    sx, tx = pair(3, seed=9)
    sc.testing.assert_close(sx, sx * (1 + 1e-7))
    torch.testing.assert_close(tx, tx * (1 + 1e-7))
    for lib, x in ((sc, sx), (torch, tx)):
        with pytest.raises(AssertionError, match="not close"):
            lib.testing.assert_close(x, x + 1e-3)
    with pytest.raises(AssertionError, match="dtype"):
        sc.testing.assert_close(sx, sx.double())
    sc.testing.assert_close(sx, sx + 1e-3, rtol=0.0, atol=2e-3)


def test_checkpoint_gives_the_plain_call_values_and_gradients():
    from scellis.utils.checkpoint import checkpoint

    sx, tx = pair(2, 3, seed=10, grad=True)
    sy = checkpoint(lambda a: (a * 2).tanh().square(), sx, use_reentrant=False)
    ty = torch.utils.checkpoint.checkpoint(
        lambda a: (a * 2).tanh().square(), tx, use_reentrant=False
    )
    close(sy, ty)
    sy.sum().backward(), ty.sum().backward()
    close(sx.grad, tx.grad)


def test_settings_and_backends_flags(tmp_path):
    sc.set_num_threads(2)
    assert sc.get_num_threads() == 2 and sc.get_default_dtype() == sc.float32
    sc.set_default_dtype(sc.float32)
    with pytest.raises(sc.ScellisError, match="dtype="):
        sc.set_default_dtype(sc.float64)
    sc.set_printoptions(precision=3)
    sc.use_deterministic_algorithms(True)
    assert sc.are_deterministic_algorithms_enabled()
    sc.backends.cudnn.benchmark = True
    assert not sc.backends.mps.is_available() and not sc.cuda.is_available()
    path = tmp_path / "m.pt"
    sc.save({"w": sc.ones(2), "epoch": 3}, path)
    back = sc.load(path, map_location="cpu", weights_only=True)
    assert back["epoch"] == 3 and back["w"].tolist() == [1.0, 1.0]


def test_rprop_and_a_custom_scheduler_match_torch():
    sp, tp = pair(3, 4, seed=14, grad=True)
    so, to = sc.optim.Rprop([sp], lr=0.05), torch.optim.Rprop([tp], lr=0.05)

    def halving(base):
        class Halving(base):
            def get_lr(self):
                return [b * 0.5 ** (self.last_epoch // 2) for b in self.base_lrs]

        return Halving

    ss = halving(sc.optim.lr_scheduler.LRScheduler)(so)
    ts = halving(torch.optim.lr_scheduler.LRScheduler)(to)
    for step in range(6):
        for p, o in ((sp, so), (tp, to)):
            o.zero_grad()
            ((p - 0.3 * step).square() * p.sin()).sum().backward()
            o.step()
        ss.step(), ts.step()
        assert ss.get_last_lr() == pytest.approx(ts.get_last_lr())
    close(sp, tp, atol=1e-5)


def test_elementwise_optimizers_and_distributions_run_on_webgpu(gpu):
    sp, tp = pair(3, 4, seed=15, grad=True)
    gp = sp.detach().to("webgpu").requires_grad_()
    for p, o in ((gp, sc.optim.Adadelta([gp], lr=0.5)), (tp, torch.optim.Adadelta([tp], lr=0.5))):
        for _ in range(3):
            o.zero_grad()
            (p.sin() * p).sum().backward()
            o.step()
    close(gp.to("cpu"), tp, atol=1e-5)
    (sl, tl), (sv, tv) = pair(5, seed=16), pair(5, seed=17)
    s = sc.distributions.Normal(sl.to("webgpu"), sl.abs().to("webgpu") + 0.5)
    t = torch.distributions.Normal(tl, tl.abs() + 0.5)
    close(s.log_prob(sv.to("webgpu")).to("cpu"), t.log_prob(tv))


def _bn_models():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 1)
    )
    ours = sc.nn.Sequential(sc.nn.Linear(3, 4), sc.nn.BatchNorm1d(4), sc.nn.Linear(4, 1))
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


@pytest.mark.parametrize("ema", [False, True])
def test_swa_averaging_rates_and_batch_norm_refresh_match_torch(ema):
    ours, theirs = _bn_models()
    kw_s = {"multi_avg_fn": sc.optim.swa_utils.get_ema_multi_avg_fn(0.9)} if ema else {}
    kw_t = {"multi_avg_fn": torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)} if ema else {}
    s_avg = sc.optim.swa_utils.AveragedModel(ours, **kw_s)
    t_avg = torch.optim.swa_utils.AveragedModel(theirs, **kw_t)
    so, to = sc.optim.SGD(ours.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), lr=0.1)
    ss = sc.optim.swa_utils.SWALR(so, swa_lr=0.02, anneal_epochs=3)
    ts = torch.optim.swa_utils.SWALR(to, swa_lr=0.02, anneal_epochs=3)
    (sx, tx), (sy, ty) = pair(8, 3, seed=18), pair(8, 1, seed=19)
    for _ in range(5):
        for m, o, x, y in ((ours, so, sx, sy), (theirs, to, tx, ty)):
            o.zero_grad()
            (m(x) - y).square().mean().backward()
            o.step()
        s_avg.update_parameters(ours), t_avg.update_parameters(theirs)
        ss.step(), ts.step()
        assert ss.get_last_lr() == pytest.approx(ts.get_last_lr())
    theirs_sd = t_avg.module.state_dict()
    for name, value in s_avg.module.state_dict().items():
        close(value, theirs_sd[name], atol=1e-5)
    batches = [sx[:4], sx[4:]]
    sc.optim.swa_utils.update_bn(batches, s_avg)
    torch.optim.swa_utils.update_bn([tx[:4], tx[4:]], t_avg)
    close(s_avg.module[1].running_mean, t_avg.module[1].running_mean)
    close(s_avg.module[1].running_var, t_avg.module[1].running_var)
    s_avg.eval(), t_avg.eval()
    close(s_avg(sx), t_avg(tx), atol=1e-5)
