"""torch habits around modules, losses, schedulers and small tensor functions that the
tutorial scripts lean on: each compared with torch itself."""

from __future__ import annotations

import pytest
import torch
from tlutil import close, pair

import scellis as sc
from scellis.base.errors import ScellisError

pytestmark = pytest.mark.torch

ATTRS = {
    "Linear(6, 4)": ["in_features", "out_features"],
    "Conv1d(3, 8, 3, stride=2, padding=1)": [
        "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
        "groups", "padding_mode",
    ],
    "Embedding(10, 4, padding_idx=0)": ["num_embeddings", "embedding_dim", "padding_idx"],
    "LSTM(4, 6, num_layers=2, batch_first=True, bidirectional=True)": [
        "input_size", "hidden_size", "num_layers", "batch_first", "bidirectional",
    ],
    "GRU(4, 6)": ["input_size", "hidden_size", "num_layers"],
    "BatchNorm1d(5)": ["num_features", "eps", "momentum", "affine"],
    "LayerNorm(5)": ["normalized_shape", "eps", "elementwise_affine"],
    "Dropout(0.3)": ["p"],
    "MultiheadAttention(8, 2)": ["embed_dim", "num_heads", "head_dim"],
    "Softmax(dim=1)": ["dim"],
    "GELU(approximate='tanh')": ["approximate"],
    "ELU(0.5)": ["alpha"],
    "Hardtanh(-2.0, 2.0)": ["min_val", "max_val"],
    "CrossEntropyLoss(label_smoothing=0.1, ignore_index=3)": [
        "label_smoothing", "ignore_index", "reduction",
    ],
    "MSELoss(reduction='sum')": ["reduction"],
}  # fmt: skip


@pytest.mark.parametrize("ctor", sorted(ATTRS))
def test_constructor_arguments_are_attributes_as_in_torch(ctor):
    theirs, ours = eval("torch.nn." + ctor), eval("sc.nn." + ctor)
    for name in ATTRS[ctor]:
        assert getattr(ours, name) == getattr(theirs, name), name


def test_a_loss_is_a_module_that_moves_and_sits_in_a_model():
    crit = sc.nn.CrossEntropyLoss(weight=sc.tensor([1.0, 2.0, 0.5])).to("cpu")
    assert isinstance(crit, sc.nn.Module)
    s, t = pair(4, 3)
    want = torch.nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]))(
        t, torch.tensor([0, 2, 1, 1])
    )
    close(crit(s, sc.tensor([0, 2, 1, 1])), want)
    model = sc.nn.Sequential(sc.nn.Linear(3, 3))
    model.criterion = sc.nn.MSELoss()
    assert [n for n, _ in model.named_children()] == ["0", "criterion"]


def _seq(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def test_sequential_slices_replaces_and_deletes_as_torch():
    for width, edit in (
        (3, lambda m: m[:-1]),
        (4, lambda m: m[1:]),
        (3, lambda m: m.__setitem__(2, type(m[0])(4, 5)) or m),
        (3, lambda m: m.__delitem__(-1) or m),
        (3, lambda m: m.insert(1, type(m[1])()) or m),
        (3, lambda m: m.add_module("extra", type(m[1])()) or m),
    ):
        theirs, ours = edit(_seq(torch)), edit(_seq(sc))
        assert type(ours).__name__ == "Sequential"
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [type(c).__name__ for c in ours] == [type(c).__name__ for c in theirs]
        out_t = theirs(torch.ones(1, width))
        assert ours(sc.ones(1, width)).shape == tuple(out_t.shape)


def test_sequential_of_an_ordered_dict_names_its_children():
    from collections import OrderedDict

    m = sc.nn.Sequential(OrderedDict([("fc", sc.nn.Linear(3, 4)), ("act", sc.nn.Tanh())]))
    assert m.fc is m[0] and list(m[1:].state_dict()) == []


def test_detach_in_place_cuts_the_tensor_from_the_graph():
    s, t = pair(3, grad=True)
    ys, yt = s * 2, t * 2
    assert ys.detach_() is ys and yt.detach_() is yt
    assert ys.requires_grad == yt.requires_grad is False
    assert ys.grad_fn is None


def test_take_reads_the_tensor_flat():
    s, t = pair(3, 4)
    idx = [[0, 5], [11, 2]]
    close(s.take(sc.tensor(idx)), t.take(torch.tensor(idx)))
    close(sc.take(s, sc.tensor([7])), torch.take(t, torch.tensor([7])))


@pytest.mark.parametrize("a,b", [(1, -1), (1, 0.5), (True, False), (2.0, 3.0)])
def test_where_of_two_numbers(a, b):
    cond = [True, False, True]
    got = sc.where(sc.tensor(cond), a, b)
    want = torch.where(torch.tensor(cond), a, b)
    assert got.tolist() == want.tolist()
    assert got.dtype.is_float == want.dtype.is_floating_point


def test_parameter_isinstance_and_half():
    m = sc.nn.Linear(3, 2)
    assert isinstance(m.weight, sc.nn.Parameter) and isinstance(
        sc.nn.Parameter(sc.ones(2)), sc.nn.Parameter
    )
    assert not isinstance(m.weight * 2, sc.nn.Parameter)
    assert m.half().weight.dtype == sc.float16


def test_compile_of_a_module_wraps_it_as_torch_does():
    lin = sc.nn.Linear(3, 2)
    fast = sc.compile(lin, mode="reduce-overhead", fullgraph=False)
    assert fast.weight is lin.weight and fast.in_features == 3
    assert list(fast.state_dict()) == list(torch.compile(torch.nn.Linear(3, 2)).state_dict())
    assert fast(sc.ones(1, 3)).tolist() == lin(sc.ones(1, 3)).tolist()
    assert sc.compile(lin, disable=True) is lin
    with pytest.raises(ScellisError, match="unknown keyword"):
        sc.compile(lin, modee="max-autotune")


def _rates(lib):
    opt = lib.optim.SGD(lib.nn.Linear(2, 2).parameters(), lr=0.1)
    first = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    for _ in range(3):
        opt.step()
        first.step()
    second = lib.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)  # made later
    out = [opt.param_groups[0]["lr"], *second.get_last_lr()]
    for _ in range(4):
        opt.step()
        first.step()
        second.step()
        out += [opt.param_groups[0]["lr"], *first.get_last_lr(), *second.get_last_lr()]
    return out


def test_a_scheduler_made_later_continues_from_the_rate_it_finds():
    assert _rates(sc) == pytest.approx(_rates(torch), rel=1e-6)


def test_linear_algebra_names_say_what_to_use():
    with pytest.raises(ScellisError, match="np.linalg"):
        sc.inverse(sc.eye(2))


def test_fan_in_and_fan_out_helper():
    w = sc.empty(4, 3, 5)
    assert sc.nn.init._calculate_fan_in_and_fan_out(w) == (15, 20)


def _restarts(lib):
    opt = lib.optim.SGD(lib.nn.Linear(2, 2).parameters(), lr=0.1)
    sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
    out = []
    for epoch in range(3):
        for i in range(4):
            opt.step()
            sched.step(epoch + i / 4)  # the fractional epochs torch's docs show
            out += [opt.param_groups[0]["lr"], float(sched.last_epoch)]
    return out


def test_scheduler_step_at_a_fractional_epoch():
    assert _restarts(sc) == pytest.approx(_restarts(torch), rel=1e-6)


def test_autograd_backward_of_a_list_sums_into_the_leaves():
    s, t = pair(3, grad=True)
    sc.autograd.backward([(s * s).sum(), (s * 3).sum()])
    torch.autograd.backward([(t * t).sum(), (t * 3).sum()])
    close(s.grad, t.grad)
    with pytest.raises(ScellisError, match="higher-order"):
        (s * s).sum().backward(create_graph=True)


def test_batch_norm1d_state_crosses_to_torch_key_for_key():
    ours, theirs = sc.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    ours(sc.randn(4, 3))
    theirs.load_state_dict({k: torch.tensor(v.tolist()) for k, v in ours.state_dict().items()})
    assert theirs.num_batches_tracked.item() == 1


@pytest.mark.parametrize(
    "key",
    [
        lambda m3, m4: (slice(None), m3),
        lambda m3, m4: (slice(None), slice(None), m4),
        lambda m3, m4: (Ellipsis, m4),
        lambda m3, m4: (slice(None), m3[:, None].expand(3, 4)),
    ],
)
def test_a_bool_mask_after_whole_slices(key):
    s, t = pair(2, 3, 4)
    m3, m4 = [True, False, True], [False, True, True, False]
    close(s[key(sc.tensor(m3), sc.tensor(m4))], t[key(torch.tensor(m3), torch.tensor(m4))])


def test_clip_grad_norm_takes_torchs_keywords_and_refuses_a_nonfinite_norm():
    lin = sc.nn.Linear(2, 2)
    lin(sc.ones(1, 2)).sum().backward()
    n = sc.nn.utils.clip_grad_norm_(lin.parameters(), 1.0, error_if_nonfinite=True, foreach=None)
    assert n.item() == pytest.approx(6**0.5, rel=1e-6)
    lin.weight.grad = lin.weight.grad * float("inf")
    with pytest.raises(ScellisError, match="not finite"):
        sc.nn.utils.clip_grad_norm_(lin.parameters(), 1.0, error_if_nonfinite=True)


def test_numpy_arrays_of_a_tensor_hold_its_values():
    np = pytest.importorskip("numpy")
    s, t = pair(2, 3)
    np.testing.assert_array_equal(np.array(s), np.array(t))
    assert np.asarray(s, dtype=np.float64).dtype == np.float64


def test_lbfgs_refuses_a_line_search_by_name():
    with pytest.raises(ScellisError, match="line_search_fn"):
        sc.optim.LBFGS(sc.nn.Linear(2, 2).parameters(), line_search_fn="strong_wolfe")


def _tied(lib):
    nn = lib.nn

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Embedding(5, 4)
            self.dec = nn.Linear(4, 5)
            self.dec.weight = self.enc.weight  # reassigned: keeps its place

    return Tied()


def test_tied_and_shared_are_listed_once_and_saved_under_every_name():
    ours, theirs = _tied(sc), _tied(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert len(ours.parameters()) == 2
    lin = sc.nn.Linear(2, 2)
    seq = sc.nn.Sequential(lin, sc.nn.ReLU(), lin)
    assert len(seq.parameters()) == 2 and [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert [n for n, _ in seq.named_modules(prefix="m")] == ["m", "m.0", "m.1"]


def test_an_optimizer_steps_a_tied_weight_once():
    def run(lib, m):
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            opt.zero_grad()
            m.dec(m.enc(lib.tensor([1, 2]))).pow(2).mean().backward()
            opt.step()
        return m.enc.weight

    theirs = _tied(torch)
    ours = _tied(sc)
    ours.load_state_dict(theirs.state_dict())
    close(run(sc, ours), run(torch, theirs))


def test_deleting_a_child_leaves_the_state():
    m = sc.nn.Sequential(sc.nn.Linear(2, 2))
    m.extra = sc.nn.Linear(2, 2)
    del m.extra
    assert list(m.state_dict()) == ["0.weight", "0.bias"]


def test_view_splits_the_last_dim_of_a_split_piece_as_torch():
    s, t = pair(2, 3, 8)
    close(s.split(4, dim=2)[1].view(2, 3, 2, 2), t.split(4, dim=2)[1].view(2, 3, 2, 2))
    with pytest.raises(ScellisError, match="reshape"):
        s.transpose(0, 1).view(3, 16)


def test_a_one_tensor_dataset_batches_as_a_list():
    x = sc.arange(10.0).reshape(5, 2)
    batches = list(sc.data.DataLoader(sc.data.TensorDataset(x), batch_size=2))
    assert all(isinstance(b, list) and len(b) == 1 for b in batches)
    assert batches[0][0].shape == (2, 2)


def test_private_tables_and_cuda_housekeeping():
    m = sc.nn.Sequential(sc.nn.Linear(2, 2))
    assert list(m._modules) == ["0"] and list(m[0]._parameters) == ["weight", "bias"]
    sc.cuda.empty_cache()
    sc.cuda.synchronize()
    assert sc.cuda.memory_allocated() == 0


def test_numpy_operands_indices_and_rows_as_torch_takes_them():
    np = pytest.importorskip("numpy")
    s, t = pair(3, 4)
    idx, mask = np.array([2, 0]), np.array([True, False, True, False])
    close(s[idx], t[idx])
    close(s[:, mask], t[:, mask])
    close(s[np.int64(1)], t[np.int64(1)])
    for ours, theirs in (
        (np.float64(2.0) * s, np.float64(2.0) * t),
        (np.float32(0.5) * s, np.float32(0.5) * t),
        (s + np.ones(4, dtype=np.float32), t + np.ones(4, dtype=np.float32)),
    ):
        assert isinstance(ours, sc.Tensor)
        close(ours, theirs)
    rows = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    assert sc.tensor(rows).tolist() == torch.tensor(np.stack(rows)).tolist()
    assert sc.tensor([sc.tensor(1.5), sc.tensor(2.5)]).tolist() == [1.5, 2.5]
    assert sc.float32.is_floating_point and not sc.int32.is_floating_point


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_of_label_pairs(accumulate):
    true, pred = [0, 1, 1, 2, 1], [0, 1, 2, 1, 2]
    ours, theirs = sc.zeros(3, 3), torch.zeros(3, 3)
    ours.index_put_((sc.tensor(true), sc.tensor(pred)), sc.ones(5), accumulate=accumulate)
    theirs.index_put_(
        (torch.tensor(true), torch.tensor(pred)), torch.ones(5), accumulate=accumulate
    )
    close(ours, theirs)


@pytest.mark.parametrize(
    "ctor",
    ["Linear(3, 2)", "Conv1d(2, 3, 3)", "Conv2d(2, 3, 3)", "ConvTranspose2d(2, 3, 3)",
     "Embedding(4, 3, padding_idx=1)", "LayerNorm(3)", "BatchNorm1d(3)", "BatchNorm2d(3)",
     "GroupNorm(1, 3)", "LSTM(3, 4)", "GRU(3, 4)"],
)  # fmt: skip
def test_reset_parameters_redraws_into_the_same_tensors_within_torchs_bounds(ctor):
    ours, theirs = eval("sc.nn." + ctor), eval("torch.nn." + ctor)
    before = {n: p for n, p in ours.named_parameters()}
    with sc.no_grad():
        for p in ours.parameters():
            p.fill_(7.0)
    ours.reset_parameters()
    theirs.reset_parameters()
    for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert p is before[n]
        bound = float(q.detach().abs().max())
        assert abs(p).max().item() <= max(bound * 1.5, 1.0) + 5.0 * ("Embedding" in ctor)
        assert p.max().item() != 7.0


def test_mask_assignment_after_slices_size_keyword_and_unique_method():
    ours, theirs = sc.zeros(2, 3), torch.zeros(2, 3)
    ours[:, sc.tensor([True, False, True])] = 2.0
    theirs[:, torch.tensor([True, False, True])] = 2.0
    close(ours, theirs)
    assert sc.ones(size=(2, 3)).shape == sc.zeros(size=[2, 3]).shape == (2, 3)
    with pytest.raises(ScellisError, match="once"):
        sc.zeros(2, size=(2, 3))
    assert sc.tensor([3.0, 1.0, 3.0]).unique().tolist() == [1.0, 3.0]


def test_module_list_and_dict_edits_as_torch():
    def edit(lib):
        nn = lib.nn
        ml = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
        ml.insert(1, nn.Tanh())
        ml[0] = nn.Linear(2, 3)
        del ml[-1]
        md = nn.ModuleDict([("a", nn.Linear(2, 2))])
        md.update({"b": nn.Linear(2, 1)})
        popped = md.pop("a")
        return [type(m).__name__ for m in ml], list(ml.state_dict()), list(md.state_dict()), popped

    ours, theirs = edit(sc), edit(torch)
    assert ours[:3] == theirs[:3] and type(ours[3]).__name__ == "Linear"
    with pytest.raises(ScellisError, match="BatchNorm"):
        sc.nn.modules  # noqa: B018


def test_a_checkpoint_with_numpy_numbers_and_the_rng_state_saves_and_resumes(tmp_path):
    np = pytest.importorskip("numpy")
    sc.manual_seed(3)
    path = tmp_path / "ck.pt"
    sc.save({"acc": np.float32(0.5), "epoch": np.int64(3), "rng": sc.get_rng_state()}, path)
    first = sc.rand(3).tolist()
    ck = sc.load(path)
    assert (ck["acc"], ck["epoch"]) == (0.5, 3)
    sc.set_rng_state(ck["rng"])
    assert sc.rand(3).tolist() == first


def test_legacy_variable_and_type_of_a_legacy_constructor():
    from scellis.autograd import Variable

    x = Variable(sc.ones(2), requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert sc.arange(3).type(sc.FloatTensor).dtype == sc.float32
