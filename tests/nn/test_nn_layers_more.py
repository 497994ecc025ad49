"""scellis.nn's activation, norm, container, cell and loss modules against torch's
(reference device): torch's state loaded key for key, outputs and gradients compared,
running statistics followed over several steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nnutil import arr, compare, pair, rng_for, th

import scellis as sc
from scellis import nn
from scellis.base.errors import ScellisError


def normal(name, *shape):
    return rng_for(name).standard_normal(shape).astype(np.float32)


ACTIVATION_MODULES = [
    ("ELU", (0.5,)), ("CELU", (1.5,)), ("SELU", ()), ("Softplus", (2.0, 4.0)), ("Mish", ()),
    ("Hardtanh", (-0.5, 0.7)), ("ReLU6", ()), ("Hardsigmoid", ()), ("Hardswish", ()),
    ("LogSigmoid", ()), ("Softsign", ()), ("Tanhshrink", ()), ("Softshrink", (0.4,)),
    ("Hardshrink", (0.4,)), ("GLU", (1,)), ("Softmax", (1,)), ("Softmin", (0,)),
    ("LogSoftmax", (-1,)), ("PReLU", ()),
]  # fmt: skip


@pytest.mark.parametrize(("name", "args"), ACTIVATION_MODULES)
def test_activation_module(name, args):
    x = normal(name, 3, 4, 5) * 3
    compare(getattr(nn, name)(*args), getattr(torch.nn, name)(*args), [x], name)


def test_prelu_per_channel_weight():
    compare(nn.PReLU(4, init=0.1), torch.nn.PReLU(4, init=0.1), [normal("prelu4", 2, 4, 3)],
            "prelu4")  # fmt: skip


def _same_state_keys(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm2d_trains_and_evaluates_like_torch(momentum):
    ours, theirs = nn.BatchNorm2d(3, momentum=momentum), torch.nn.BatchNorm2d(3, momentum=momentum)
    _same_state_keys(ours, theirs)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
        theirs.bias.uniform_(-0.5, 0.5)
    for step in range(3):
        compare(ours, theirs, [normal(f"bn{step}", 4, 3, 5, 2) * 2 + 1], f"bn{step}")
        theirs_state = theirs.state_dict()
        for key in ("running_mean", "running_var"):
            torch.testing.assert_close(th(getattr(ours, key)), theirs_state[key])
        assert int(ours.num_batches_tracked.item()) == int(theirs.num_batches_tracked)
        for p in (*ours.parameters(), *theirs.parameters()):
            p.grad = None
    ours.eval(), theirs.eval()
    x = normal("bn:eval", 2, 3, 4, 4)
    torch.testing.assert_close(th(ours(sc.tensor(x))), theirs(torch.from_numpy(x)).detach())


def test_batch_norm_without_running_stats_and_torch_loads_ours():
    ours = nn.BatchNorm2d(2, affine=False, track_running_stats=False)
    theirs = torch.nn.BatchNorm2d(2, affine=False, track_running_stats=False)
    ours.eval(), theirs.eval()
    compare(ours, theirs, [normal("bn:nostats", 3, 2, 3, 3)], "bn:nostats")
    trained = nn.BatchNorm2d(3)
    trained(sc.tensor(normal("bn:t", 4, 3, 2, 2)))
    fresh = torch.nn.BatchNorm2d(3)
    fresh.load_state_dict({k: torch.from_numpy(np.asarray(v.tolist())) for k, v in
                           trained.state_dict().items()})  # fmt: skip
    torch.testing.assert_close(fresh.running_mean, th(trained.running_mean))


def test_group_and_instance_norms():
    x = normal("gn", 2, 6, 3, 4)
    compare(nn.GroupNorm(3, 6), torch.nn.GroupNorm(3, 6), [x], "gn")
    compare(nn.GroupNorm(2, 6, affine=False), torch.nn.GroupNorm(2, 6, affine=False), [x], "gn2")
    compare(nn.InstanceNorm2d(6, affine=True), torch.nn.InstanceNorm2d(6, affine=True), [x], "in")
    compare(nn.InstanceNorm1d(4), torch.nn.InstanceNorm1d(4), [normal("in1", 2, 4, 7)], "in1")


def test_channel_dropout_zeroes_whole_channels_and_scales_the_rest():
    x = sc.tensor(normal("d2", 4, 8, 3, 3) + 5.0)  # no element is zero
    m = nn.Dropout2d(0.5)
    y = np.asarray(m(x).tolist())
    per_channel = (y == 0).reshape(4, 8, 9)
    assert np.all(per_channel.all(-1) | ~per_channel.any(-1))  # all or nothing per channel
    kept = ~per_channel.all(-1)
    assert 0 < kept.sum() < 32
    np.testing.assert_allclose(y[kept], 2 * np.asarray(x.tolist())[kept], rtol=1e-6)
    m.eval()
    np.testing.assert_array_equal(np.asarray(m(x).tolist()), np.asarray(x.tolist()))


def test_unflatten_and_parameter_containers_keep_torch_keys():
    compare(nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(1, (2, 3)), [normal("unf", 4, 6)], "unf")

    def build(lib, make):
        m = lib.Module()
        m.plist = lib.ParameterList([lib.Parameter(make(normal("pl", 2, 3)))])
        m.plist.append(lib.Parameter(make(normal("pl2", 4))))
        m.pdict = lib.ParameterDict({"scale": lib.Parameter(make(normal("pd", 3)))})
        return m

    ours, theirs = build(nn, sc.tensor), build(torch.nn, torch.from_numpy)
    _same_state_keys(ours, theirs)
    ours.load_state_dict(theirs.state_dict())
    assert len(ours.plist) == 2 and "scale" in ours.pdict
    assert [p.shape for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]


def test_embedding_from_pretrained_freeze_and_padding():
    w = normal("pre", 5, 3)
    ours = nn.Embedding.from_pretrained(sc.tensor(w), freeze=False, padding_idx=1)
    theirs = torch.nn.Embedding.from_pretrained(torch.from_numpy(w), freeze=False, padding_idx=1)
    compare(ours, theirs, [np.array([[0, 1, 4], [1, 2, 2]])], "pre")
    frozen = nn.Embedding.from_pretrained(sc.tensor(w))
    assert not frozen.weight.requires_grad and list(frozen.state_dict()) == ["weight"]


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_with_and_without_state(name):
    x = normal(f"{name}:x", 3, 4)
    compare(getattr(nn, name)(4, 5), getattr(torch.nn, name)(4, 5), [x], name)
    h = normal(f"{name}:h", 3, 5)
    state = [h, normal(f"{name}:c", 3, 5)] if name == "LSTMCell" else [h]
    call = (lambda m, a, b, c: m(a, (b, c))) if name == "LSTMCell" else None
    compare(getattr(nn, name)(4, 5, bias=False), getattr(torch.nn, name)(4, 5, bias=False),
            [x, *state], f"{name}:s", call=call)  # fmt: skip


@pytest.mark.parametrize("batch_first", [False, True])
def test_rnn_stacked_bidirectional_relu(batch_first):
    kw = dict(num_layers=2, nonlinearity="relu", bidirectional=True, batch_first=batch_first)
    x = normal("rnn", 3, 4, 2)
    h0 = normal("rnn:h", 4, 3 if batch_first else 4, 5) * 0.5
    ours, theirs = nn.RNN(2, 5, **kw), torch.nn.RNN(2, 5, **kw)
    _same_state_keys(ours, theirs)
    compare(ours, theirs, [x, h0], "rnn")


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("sorted_", [True, False])
def test_packed_padded_batches_match_torch(kind, sorted_):
    from torch.nn.utils import rnn as trnn

    from scellis.nn.utils import rnn as srnn

    lengths = [5, 3, 2] if sorted_ else [2, 5, 3]
    x = normal(f"pack:{kind}", 3, 5, 2)
    ours_m = getattr(nn, kind)(2, 4, num_layers=2, batch_first=True, bidirectional=True)
    theirs_m = getattr(torch.nn, kind)(2, 4, num_layers=2, batch_first=True, bidirectional=True)
    ours_m.load_state_dict(theirs_m.state_dict())
    xs, xt = pair(x)

    def run(lib, m, inp):
        packed = lib.pack_padded_sequence(inp, lengths, batch_first=True, enforce_sorted=sorted_)
        out, final = m(packed)
        h = final[0] if isinstance(final, tuple) else final
        padded, lens = lib.pad_packed_sequence(out, batch_first=True)
        return padded, h, packed, lens

    ps, hs, packed_s, lens_s = run(srnn, ours_m, xs)
    pt, ht, packed_t, lens_t = run(trnn, theirs_m, xt)
    torch.testing.assert_close(th(packed_s.data), packed_t.data)
    assert lens_s.tolist() == lens_t.tolist()
    torch.testing.assert_close(th(ps), pt.detach())
    torch.testing.assert_close(th(hs), ht.detach())
    (ps.sum() + (hs * hs).sum()).backward()
    (pt.sum() + (ht * ht).sum()).backward()
    torch.testing.assert_close(th(xs.grad), xt.grad)
    for name, p in theirs_m.named_parameters():
        torch.testing.assert_close(th(dict(ours_m.named_parameters())[name].grad), p.grad)


def test_pad_sequence_and_pack_sequence():
    from torch.nn.utils import rnn as trnn

    from scellis.nn.utils import rnn as srnn

    seqs = [normal(f"ps{i}", n, 2) for i, n in enumerate((3, 1, 4))]
    for kw in ({}, {"batch_first": True, "padding_value": -1.0}, {"padding_side": "left"}):
        got = srnn.pad_sequence([sc.tensor(s) for s in seqs], **kw)
        want = trnn.pad_sequence([torch.from_numpy(s) for s in seqs], **kw)
        torch.testing.assert_close(th(got), want)
    back = srnn.unpad_sequence(srnn.pad_sequence([sc.tensor(s) for s in seqs]), [3, 1, 4])
    for b, s in zip(back, seqs, strict=True):
        np.testing.assert_array_equal(arr(b), s)
    got = srnn.pack_sequence([sc.tensor(s) for s in seqs], enforce_sorted=False)
    want = trnn.pack_sequence([torch.from_numpy(s) for s in seqs], enforce_sorted=False)
    torch.testing.assert_close(th(got.data), want.data)
    assert got.batch_sizes.tolist() == want.batch_sizes.tolist()
    assert got.sorted_indices.tolist() == want.sorted_indices.tolist()


def test_parameter_vectors_and_refused_parametrizations():
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    want = np.concatenate([arr(p).ravel() for p in m.parameters()])
    np.testing.assert_array_equal(arr(v), want)
    nn.utils.vector_to_parameters(v * 2.0, m.parameters())
    np.testing.assert_allclose(np.concatenate([arr(p).ravel() for p in m.parameters()]), 2 * want)
    with pytest.raises(ScellisError, match="spectral_norm"):
        nn.utils.parametrizations.spectral_norm(m)


@pytest.mark.parametrize("legacy", [False, True])
def test_weight_norm_matches_torch(legacy):
    ours_wn = nn.utils.weight_norm if legacy else nn.utils.parametrizations.weight_norm
    theirs_wn = (
        torch.nn.utils.weight_norm if legacy else torch.nn.utils.parametrizations.weight_norm
    )
    ours, theirs = ours_wn(nn.Conv2d(2, 3, 3)), theirs_wn(torch.nn.Conv2d(2, 3, 3))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    with torch.no_grad():  # a scale apart from the direction's norm
        g = theirs.weight_g if legacy else theirs.parametrizations.weight.original0
        g.mul_(torch.linspace(0.5, 1.5, 3).reshape(3, 1, 1, 1))
    compare(ours, theirs, [normal("wn", 2, 2, 5, 5)], f"wn{legacy}")
    plain = nn.Linear(4, 3)
    before = arr(plain.weight)
    nn.utils.parametrizations.weight_norm(plain, dim=1)
    np.testing.assert_allclose(arr(plain.weight), before, rtol=1e-6)
    assert not isinstance(nn.Linear(4, 3).weight, property)  # other instances untouched


LOSS_MODULES = [
    ("BCELoss", {}, "prob"), ("BCEWithLogitsLoss", {"reduction": "sum"}, "prob"),
    ("NLLLoss", {"ignore_index": 2}, "cls"), ("SmoothL1Loss", {"beta": 0.3}, "real"),
    ("KLDivLoss", {"reduction": "batchmean"}, "prob"), ("SoftMarginLoss", {}, "sign"),
    ("MultiLabelSoftMarginLoss", {}, "prob"), ("PoissonNLLLoss", {}, "count"),
    ("HuberLoss", {"delta": 0.5}, "real"), ("MSELoss", {"reduction": "none"}, "real"),
    ("HingeEmbeddingLoss", {"margin": 0.5}, "sign"),
]  # fmt: skip


def _target(kind):
    r = rng_for(f"tgt:{kind}")
    return {
        "prob": r.uniform(0.05, 0.95, (4, 3)).astype(np.float32),
        "cls": np.array([0, 2, 1, 2]),
        "real": r.standard_normal((4, 3)).astype(np.float32),
        "sign": np.sign(r.standard_normal((4, 3))).astype(np.float32),
        "count": r.poisson(2.0, (4, 3)).astype(np.float32),
    }[kind]


@pytest.mark.parametrize(("name", "kw", "kind"), LOSS_MODULES)
def test_loss_module(name, kw, kind):
    x = normal(f"lm:{name}", 4, 3)
    if name == "BCELoss":
        x = 1 / (1 + np.exp(-x))
    if name == "NLLLoss":
        x = x - np.log(np.exp(x).sum(1, keepdims=True))
    xs, xt = pair(x.astype(np.float32))
    ts, tt = pair(_target(kind), grad=False)
    got, want = getattr(nn, name)(**kw)(xs, ts), getattr(torch.nn, name)(**kw)(xt, tt)
    torch.testing.assert_close(th(got), want.detach())
    got.sum().backward(), want.sum().backward()
    torch.testing.assert_close(th(xs.grad), xt.grad)


def test_weighted_and_three_input_loss_modules():
    w, pw = rng_for("lw").uniform(0.5, 2, 3).astype(np.float32), np.float32([1.5, 0.5, 3.0])
    x, t = normal("lw:x", 4, 3), rng_for("lw:t").uniform(0, 1, (4, 3)).astype(np.float32)
    ours = nn.BCEWithLogitsLoss(weight=sc.tensor(w), pos_weight=sc.tensor(pw))
    got = ours(sc.tensor(x), sc.tensor(t))
    want = torch.nn.BCEWithLogitsLoss(weight=torch.from_numpy(w), pos_weight=torch.from_numpy(pw))
    torch.testing.assert_close(th(got), want(torch.from_numpy(x), torch.from_numpy(t)))
    nll = nn.NLLLoss(weight=sc.tensor(w))(sc.tensor(x), sc.tensor([0, 1, 2, 1], dtype="i32"))
    tnll = torch.nn.NLLLoss(weight=torch.from_numpy(w))(torch.from_numpy(x),
                                                        torch.tensor([0, 1, 2, 1]))  # fmt: skip
    torch.testing.assert_close(th(nll), tnll)
    a, b, c = normal("tm:a", 4, 5), normal("tm:b", 4, 5), normal("tm:c", 4, 5)
    y = np.float32([1, -1, 1, -1])
    cases = [
        ("TripletMarginLoss", (a, b, c), {"margin": 0.5}),
        ("CosineEmbeddingLoss", (a, b, y), {"margin": 0.1}),
        ("MarginRankingLoss", (a[:, 0], b[:, 0], y), {"margin": 0.2}),
        ("GaussianNLLLoss", (a, b, np.abs(c) + 0.1), {"full": True}),
    ]
    for name, args, kw in cases:
        got = getattr(nn, name)(**kw)(*[sc.tensor(v) for v in args])
        want = getattr(torch.nn, name)(**kw)(*[torch.from_numpy(v) for v in args])
        torch.testing.assert_close(th(got), want, msg=name)


def test_two_input_layers():
    a, b = normal("two:a", 3, 4), normal("two:b", 3, 5)
    compare(nn.Bilinear(4, 5, 2), torch.nn.Bilinear(4, 5, 2), [a, b], "bilinear")
    c = normal("two:c", 3, 4)
    compare(nn.CosineSimilarity(1), torch.nn.CosineSimilarity(1), [a, c], "cossim")
    compare(nn.PairwiseDistance(1.5), torch.nn.PairwiseDistance(1.5), [a, c], "pdist")


def test_more_initialisers():
    w = sc.zeros(6, 4)
    nn.init.orthogonal_(w, gain=2.0)
    q = arr(w)
    np.testing.assert_allclose(q.T @ q, 4.0 * np.eye(4), atol=1e-4)
    wide = sc.zeros(3, 2, 4)
    q = arr(nn.init.orthogonal_(wide)).reshape(3, 8)
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-5)
    t = sc.zeros(4000)
    v = arr(nn.init.trunc_normal_(t, mean=0.5, std=1.0, a=-0.5, b=1.0))
    assert v.min() >= -0.5 and v.max() <= 1.0
    want = torch.nn.init.trunc_normal_(torch.empty(200000), mean=0.5, std=1.0, a=-0.5, b=1.0)
    assert abs(v.mean() - float(want.mean())) < 0.03 and abs(v.std() - float(want.std())) < 0.03
    np.testing.assert_array_equal(arr(nn.init.eye_(sc.zeros(3, 5))), np.eye(3, 5))
    for shape, groups in (((4, 2, 3, 3), 2), ((3, 5, 3), 1)):
        want = torch.nn.init.dirac_(torch.empty(shape), groups).numpy()
        np.testing.assert_array_equal(arr(nn.init.dirac_(sc.zeros(*shape), groups)), want)


PADS = [
    ("ZeroPad2d", ((1, 2, 0, 3),)), ("ConstantPad1d", (2, 0.5)), ("ConstantPad2d", (1, -1.0)),
    ("ReflectionPad1d", ((2, 1),)), ("ReflectionPad2d", (2,)), ("ReplicationPad1d", (3,)),
    ("ReplicationPad2d", ((0, 1, 2, 3),)), ("CircularPad2d", (1,)), ("ZeroPad1d", (2,)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "args"), PADS)
def test_padding_layers(name, args):
    x = normal(name, 2, 3, 4) if name.endswith("1d") else normal(name, 2, 3, 4, 5)
    compare(getattr(nn, name)(*args), getattr(torch.nn, name)(*args), [x], name)


def test_fold_unfold_shuffle_threshold_softmax2d_modules():
    x = normal("mods", 2, 4, 4, 6)
    compare(nn.Unfold(2, stride=2), torch.nn.Unfold(2, stride=2), [x], "unfoldm")
    cols = normal("foldm", 2, 8, 6)
    compare(nn.Fold((4, 6), 2, stride=2), torch.nn.Fold((4, 6), 2, stride=2), [cols], "foldm")
    compare(nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2), [x], "unshuffle")
    compare(nn.Threshold(0.1, -2.0), torch.nn.Threshold(0.1, -2.0), [x], "threshold")
    compare(nn.Softmax2d(), torch.nn.Softmax2d(), [x], "softmax2d")


@pytest.mark.parametrize(("p", "weighted"), [(1, False), (2, True)])
def test_multi_margin_loss(p, weighted):
    x, y = normal("mm", 5, 4), np.array([0, 3, 1, 1, 2])
    w = np.float32([0.5, 1.0, 2.0, 1.5])
    xs, xt = pair(x)
    kw_s = {"weight": sc.tensor(w)} if weighted else {}
    kw_t = {"weight": torch.from_numpy(w)} if weighted else {}
    got = nn.MultiMarginLoss(p=p, margin=0.7, **kw_s)(xs, sc.tensor(y, dtype="i32"))
    want = torch.nn.MultiMarginLoss(p=p, margin=0.7, **kw_t)(xt, torch.from_numpy(y))
    torch.testing.assert_close(th(got), want.detach())
    got.backward(), want.backward()
    torch.testing.assert_close(th(xs.grad), xt.grad)


def test_torch_names_not_provided_say_what_to_use():
    import scellis.nn.functional as F

    with pytest.raises(ScellisError, match=r"nn\.CTCLoss is not provided: train with"):
        nn.CTCLoss  # noqa: B018
    with pytest.raises(ScellisError, match=r"nn\.functional\.conv3d is not provided: fold"):
        F.conv3d  # noqa: B018
    assert not hasattr(nn, "Conv3d") and getattr(nn, "EmbeddingBag", None) is None
    with pytest.raises(AttributeError, match="no attribute 'NoSuchLayer'"):
        nn.NoSuchLayer  # noqa: B018


def test_layer_norm_over_several_trailing_axes():
    x = normal("lnm", 2, 3, 4, 5)
    ours, theirs = nn.LayerNorm((4, 5)), torch.nn.LayerNorm((4, 5))
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5), theirs.bias.uniform_(-0.5, 0.5)
    assert tuple(ours.weight.shape) == (4, 5)
    compare(ours, theirs, [x], "lnm")
    import scellis.nn.functional as F

    w, b = normal("lnm:w", 3, 4, 5), normal("lnm:b", 3, 4, 5)
    xs, ws, bs = sc.tensor(x), sc.tensor(w), sc.tensor(b)
    got = F.layer_norm(xs, (3, 4, 5), ws, bs)
    want = torch.nn.functional.layer_norm(*(torch.from_numpy(a) for a in (x,)), (3, 4, 5),
                                          torch.from_numpy(w), torch.from_numpy(b))  # fmt: skip
    torch.testing.assert_close(th(got), want)


def test_dropout3d_and_flatten_parameters():
    y = arr(nn.Dropout3d(0.5)(sc.tensor(normal("d3", 2, 6, 2, 2, 2) + 9.0)))
    per_channel = (y == 0).reshape(12, 8)
    assert np.all(per_channel.all(-1) | ~per_channel.any(-1)) and per_channel.any()
    for m in (nn.LSTM(2, 3), nn.GRU(2, 3), nn.RNN(2, 3)):
        m.flatten_parameters()
