"""Batches: the Philox shuffle order depends on (seed, epoch) only; batches by index."""

from trainutil import XS, YS

import scellis as sc
from scellis.base.rng import raw_u32, stream_key
from scellis.train import Batches, shuffled_order


def test_order_is_a_philox_permutation():
    order = shuffled_order(10, seed=3, epoch=2)
    assert sorted(order) == list(range(10))
    draws = raw_u32(stream_key(3, "shuffle"), 10, 0, 2)
    assert [draws[i] for i in order] == sorted(draws)
    assert order == shuffled_order(10, 3, 2)
    assert order != shuffled_order(10, 3, 3) and order != shuffled_order(10, 4, 2)


def test_batches_by_index_and_from_tensors():
    b = Batches(XS, YS, 10)
    assert len(b) == 5 and len(Batches(XS, YS, 10, drop_last=True)) == 4
    full = [(x.tolist(), y.tolist()) for x, y in b.batches(1, 9)]
    tail = [(x.tolist(), y.tolist()) for x, y in b.batches(1, 9, start=3)]
    assert tail == full[3:] and len(full[-1][0]) == 8
    order = shuffled_order(48, 9, 1)
    assert full[0][0] == sc.tensor([XS[i] for i in order[:10]]).tolist()
    on_device = Batches(sc.tensor(XS), sc.tensor(YS), 10)
    assert [(x.tolist(), y.tolist()) for x, y in on_device.batches(1, 9)] == full


def test_unshuffled_keeps_order():
    x, _ = next(iter(Batches(XS, YS, 4, shuffle=False).batches(0, 0)))
    assert x.tolist() == sc.tensor(XS[:4]).tolist()
