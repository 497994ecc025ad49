"""``--map`` rules that split and merge tensors, checked against torch state dicts.

nn.MultiheadAttention packs q, k, v into one ``in_proj_weight``; the catalog's
attention keeps them apart. A split maps torch's packed tensors onto the separate
projections (and the model then computes what torch computes); a merge packs separate
projections back into one tensor, equal to torch's.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import scellis as sc  # noqa: E402
from scellis.base.errors import ScellisError  # noqa: E402
from scellis.cli.main import main  # noqa: E402
from scellis.codecs import tensor_map  # noqa: E402
from scellis.codecs.convert import import_file  # noqa: E402
from scellis.codecs.raw import from_values  # noqa: E402
from scellis.codecs.weights import load_into  # noqa: E402
from scellis.model import RecordModel  # noqa: E402

E, HEADS, T = 16, 2, 5

ATTENTION = f"""model: tests/mha@1
inputs:
  x: {{shape: [batch, {T}, {E}], dtype: f32}}
blocks:
  attn:
    block_id: nn/attention
    in: x
    embed_dim: {E}
    num_heads: {HEADS}
outputs: [attn]
determinism_tier: debug
seed: 0
"""

PACKED = f"""model: tests/packed@1
inputs:
  x: {{shape: [batch, {E}], dtype: f32}}
blocks:
  in_proj:
    block_id: nn/linear
    in: x
    in_features: {E}
    out_features: {3 * E}
outputs: [in_proj]
determinism_tier: debug
seed: 0
"""

SPLIT = [
    "in_proj_weight=attn.q.weight,attn.k.weight,attn.v.weight",
    "in_proj_bias=attn.q.bias,attn.k.bias,attn.v.bias",
    "out_proj.=attn.o.",
]


def _arr(t) -> np.ndarray:
    return np.frombuffer(t.data, "<f4").reshape(t.shape)


def _mha(tmp_path):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(E, HEADS, batch_first=True).eval()
    with torch.no_grad():
        for p in mha.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    torch.save(mha.state_dict(), tmp_path / "mha.pt")
    (tmp_path / "attn.sml").write_text(ATTENTION)
    return mha


def test_packed_qkv_splits_onto_separate_projections(tmp_path):
    mha = _mha(tmp_path)
    res = import_file(tmp_path / "mha.pt", store=tmp_path / "s", record=tmp_path / "attn.sml",
                      name_map=tensor_map.parse(SPLIT))  # fmt: skip
    sd = mha.state_dict()
    for i, part in enumerate("qkv"):
        rows = slice(i * E, (i + 1) * E)
        np.testing.assert_array_equal(_arr(res.tensors[f"attn.{part}.weight"]),
                                      sd["in_proj_weight"][rows].numpy())  # fmt: skip
        np.testing.assert_array_equal(_arr(res.tensors[f"attn.{part}.bias"]),
                                      sd["in_proj_bias"][rows].numpy())  # fmt: skip
    m = RecordModel(res.record, device="reference").eval()
    load_into(m, res.tensors)
    x = np.random.default_rng(1).standard_normal((3, T, E)).astype(np.float32)
    want = mha(*(torch.from_numpy(x),) * 3, need_weights=False)[0].detach().numpy()
    got = np.asarray(m(sc.tensor(x, device="reference")).tolist())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


class _Separate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(E, E) for _ in range(3))


def test_separate_projections_merge_into_the_packed_tensor_and_back(tmp_path):
    mha = _mha(tmp_path)
    import_file(tmp_path / "mha.pt", store=tmp_path / "s", record=tmp_path / "attn.sml",
                name_map=tensor_map.parse(SPLIT))  # fmt: skip
    sep = _Separate()
    with torch.no_grad():  # the split parts, as a torch module with separate projections
        for i, part in enumerate("qkv"):
            getattr(sep, part).weight.copy_(mha.in_proj_weight[i * E : (i + 1) * E])
            getattr(sep, part).bias.copy_(mha.in_proj_bias[i * E : (i + 1) * E])
    torch.save(sep.state_dict(), tmp_path / "sep.pt")
    (tmp_path / "packed.sml").write_text(PACKED)
    merge = ["q.weight,k.weight,v.weight=in_proj.weight", "q.bias,k.bias,v.bias=in_proj.bias"]
    res = import_file(tmp_path / "sep.pt", store=tmp_path / "s", record=tmp_path / "packed.sml",
                      name_map=tensor_map.parse(merge))  # fmt: skip
    np.testing.assert_array_equal(_arr(res.tensors["in_proj.weight"]),
                                  mha.in_proj_weight.detach().numpy())  # fmt: skip
    np.testing.assert_array_equal(_arr(res.tensors["in_proj.bias"]),
                                  mha.in_proj_bias.detach().numpy())  # fmt: skip


def test_split_with_sizes_along_an_axis_and_merge_along_it_equal_torch():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 7, 3)).astype(np.float32)
    m = tensor_map.parse(["w=a:2,b:5@1"])
    got = tensor_map.apply({"w": from_values("F32", w.shape, w.ravel().tolist())}, m)
    a, b = torch.from_numpy(w).split([2, 5], dim=1)
    np.testing.assert_array_equal(_arr(got["a"]), a.numpy())
    np.testing.assert_array_equal(_arr(got["b"]), b.numpy())
    back = tensor_map.apply(got, tensor_map.parse(["a,b=w@-2"]))
    np.testing.assert_array_equal(_arr(back["w"]), torch.cat([a, b], dim=-2).numpy())


@pytest.mark.parametrize(
    "rule,problem",
    [
        ("nope=a,b", r"the file has no tensor 'nope' \(it holds w, w2\)"),
        ("w=a:2,b:4@1", r"sizes 2\+4=6 do not add up to 'w'\'s 7 along axis 1"),
        ("w=a,b@1", r"'w' has 7 along axis 1, not divisible into 2 equal parts"),
        ("w=a,b@3", r"'w' has 3 axes, no axis 3"),
        ("w=a:2,b", r"give every part a size, or none"),
        ("w,v=a,b", r"several names on both sides"),
        ("w", r"--map takes OLD=NEW"),
        ("w=a,a", r"'a' is named twice"),
        ("w,w=a", r"'w' is named twice"),
        ("w=a=b", r"one '=' a rule"),
        ("w=a:\u00b2,b:5@1", r"the size of 'a' must be a positive integer"),
        ("w=a:2,b:" + "9" * 5000 + "@1", r"the size of 'b' must be a positive integer"),
        ("w=a,b@" + "9" * 5000, r"no tensor has an axis 9+\.\.\."),
        ("w=a,w2", r"'w2' is already a tensor of the file"),
    ],
)
def test_bad_rules_say_what_is_wrong(rule, problem):
    w = from_values("F32", (4, 7, 3), [0.5] * 84)
    with pytest.raises(ScellisError, match=problem) as got:
        tensor_map.apply({"w": w, "w2": w}, tensor_map.parse([rule]))
    assert len(str(got.value)) < 300  # a pasted megabyte of rule is quoted, not echoed


def test_a_name_renamed_two_ways_is_refused():
    with pytest.raises(ScellisError, match=r"'a' is already renamed to 'b'"):
        tensor_map.parse(["a=b", "a=c"])
    assert tensor_map.parse(["a=b", "a=b"]).renames == {"a": "b"}


@pytest.mark.parametrize("rename", ["w=v", "a=q"])
def test_a_rename_that_a_split_would_leave_undone_is_refused(rename):
    with pytest.raises(ScellisError, match=r"is also renamed .* a split or merge leaves undone"):
        tensor_map.parse(["w=a,b", rename])


def test_merge_of_tensors_that_do_not_stack_is_refused():
    a, b = from_values("F32", (2, 3), [1.0] * 6), from_values("F32", (2, 4), [1.0] * 8)
    with pytest.raises(ScellisError, match=r"'b' \(F32 \[2, 4\]\) does not stack with 'a'"):
        tensor_map.apply({"a": a, "b": b}, tensor_map.parse(["a,b=w"]))


def test_cli_reads_a_map_file_and_refuses_bad_rules_with_exit_2(tmp_path, capsys):
    _mha(tmp_path)
    rules = tmp_path / "mha.map"
    rules.write_text("# torch's packed projections onto the catalog's\n" + "\n".join(SPLIT))
    args = ["import", str(tmp_path / "mha.pt"), "--record", str(tmp_path / "attn.sml"),
            "--store", str(tmp_path / "s")]  # fmt: skip
    assert main([*args, "--map", str(rules), "--to", str(tmp_path / "out.sml")]) == 0
    assert "weights: sha256:" in (tmp_path / "out.sml").read_text()
    capsys.readouterr()
    rules.write_text("in_proj_weight=attn.q.weight:16,attn.k.weight:16,attn.v.weight:8\n")
    assert main([*args, "--map", str(rules)]) == 2
    err = capsys.readouterr().err
    assert "mha.map:1: --map" in err and "16+16+8=40 do not add up" in err
    assert "Traceback" not in err


def test_cli_refuses_a_map_that_is_a_folder_or_a_fifo_without_reading_it(tmp_path, capsys):
    _mha(tmp_path)
    (tmp_path / "rules").mkdir()
    os.mkfifo(tmp_path / "pipe")  # reading it would wait for a writer forever
    args = ["import", str(tmp_path / "mha.pt"), "--record", str(tmp_path / "attn.sml"),
            "--store", str(tmp_path / "s"), "--to", str(tmp_path / "out.sml")]  # fmt: skip
    for name in ("rules", "pipe"):
        assert main([*args, "--map", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert "a map file must be a regular file" in err and "Traceback" not in err
    assert not (tmp_path / "out.sml").exists() and not (tmp_path / "s").exists()


def test_a_map_file_over_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    rules = tmp_path / "big.map"
    rules.write_text("".join(f"n{i}=m{i}\n" for i in range(2000)))
    assert len(tensor_map.parse([str(rules)]).renames) == 2000
    monkeypatch.setattr(tensor_map, "MAX_MAP_BYTES", rules.stat().st_size - 1)
    with pytest.raises(ScellisError, match=r"big.map: \d+ bytes is over the \d+ cap"):
        tensor_map.parse([str(rules)])
