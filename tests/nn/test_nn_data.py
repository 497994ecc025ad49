"""scellis.data's TensorDataset and DataLoader: torch's shape, the project's Philox order."""

from __future__ import annotations

import scellis as sc
from scellis.data import DataLoader, Dataset, TensorDataset, random_split
from scellis.data.shuffle import shuffled_order
from scellis.rng import Generator
from scellis.train import Batches


def rows(n=10):
    x = sc.tensor([[float(i), float(-i)] for i in range(n)])
    y = sc.tensor([float(i) * 10 for i in range(n)])
    return x, y


def test_batches_follow_the_shuffle_stream_like_the_training_loop():
    x, y = rows()
    loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, seed=7)
    assert len(loader) == 3
    for epoch in range(2):
        ours = [(bx.tolist(), by.tolist()) for bx, by in loader]
        loop = [(bx.tolist(), by.tolist()) for bx, by in Batches(x, y, 4).batches(epoch, 7)]
        assert ours == loop
        order = shuffled_order(10, 7, epoch)
        assert [r[0] for b in ours for r in b[0]] == [float(i) for i in order]
    again = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, seed=7)
    first = [b[1].tolist() for b in again]
    assert first == [b[1].tolist() for b in DataLoader(TensorDataset(x, y), 4, True, seed=7)]
    assert first != [b[1].tolist() for b in again]  # the next epoch, another order


def test_generator_seed_drop_last_and_plain_order():
    x, _ = rows(7)
    a = DataLoader(TensorDataset(x), batch_size=3, shuffle=True, generator=Generator(3))
    b = DataLoader(TensorDataset(x), batch_size=3, shuffle=True, seed=3)
    assert [t.tolist() for (t,) in a] == [t.tolist() for (t,) in b]
    plain = DataLoader(TensorDataset(x), batch_size=3, drop_last=True)
    assert len(plain) == 2
    assert [t.shape for (t,) in plain] == [(3, 2), (3, 2)]
    assert [t.tolist()[0][0] for (t,) in plain] == [0.0, 3.0]


def test_manual_seed_sets_the_default_order():
    x, _ = rows(9)
    sc.manual_seed(11)
    a = [t.tolist() for (t,) in DataLoader(TensorDataset(x), 4, shuffle=True)]
    sc.manual_seed(11)
    b = [t.tolist() for (t,) in DataLoader(TensorDataset(x), 4, shuffle=True)]
    assert a == b
    sc.manual_seed(0)


class Pairs(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": sc.tensor([float(i), 1.0]), "n": i, "pair": (float(i), sc.tensor(2.0))}


def test_any_dataset_is_collated_field_by_field():
    (batch,) = list(DataLoader(Pairs(), batch_size=5))
    assert batch["x"].shape == (5, 2) and batch["n"].tolist() == [0, 1, 2, 3, 4]
    assert batch["pair"][0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert batch["pair"][1].shape == (5,)


def test_random_split_is_disjoint_and_reproducible():
    x, y = rows(10)
    a, b = random_split(TensorDataset(x, y), [7, 3], seed=2)
    assert len(a) == 7 and len(b) == 3
    assert sorted(a.indices + b.indices) == list(range(10))
    assert a.indices == random_split(TensorDataset(x, y), [7, 3], seed=2)[0].indices
    assert a[0][1].item() == 10.0 * a.indices[0]
