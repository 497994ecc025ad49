"""A scheduler whose step count the record leaves out (warmup_cosine's total_steps,
cosine's t_max) counts epochs x batches an epoch, as the product page's example record
writes it: the rates a run takes match torch's schedulers built with that count."""

from __future__ import annotations

import asyncio

import pytest
import torch

from scellis.run.prepare import check_record, prepare_run
from storeutil import STEPS_PER_EPOCH, write_record

EPOCHS = 3  # the tiny record's


def _rates(tmp_path, scheduler: str) -> list[float]:
    rec = write_record(tmp_path, lr=0.05)
    text = rec.read_text().replace("loss:", f"scheduler: {scheduler}\nloss:", 1)
    run = prepare_run(check_record(text, "derived.sml"), "reference", base_dir=tmp_path)

    async def go():
        return [e async for e in run.fit(log_every=1, validate=False)]

    return [e["lr"] for e in asyncio.run(go()) if e["kind"] == "log"]


def _torch_rates(make, steps: int) -> list[float]:
    p = torch.nn.Parameter(torch.randn(3))
    opt = torch.optim.SGD([p], lr=0.05)
    sched = make(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_warmup_cosine_with_only_its_warmup(tmp_path):
    total = EPOCHS * STEPS_PER_EPOCH
    got = _rates(tmp_path, "{ block_id: training/scheduler/warmup_cosine, warmup_steps: 4, "
                           "start_factor: 0.25 }")  # fmt: skip
    sched = torch.optim.lr_scheduler

    def make(opt):
        warm = sched.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=4)
        cos = sched.CosineAnnealingLR(opt, T_max=total - 4)
        return sched.SequentialLR(opt, [warm, cos], milestones=[4])

    assert len(got) == total
    assert got == pytest.approx(_torch_rates(make, total), rel=1e-6, abs=1e-9)


def test_cosine_without_t_max(tmp_path):
    total = EPOCHS * STEPS_PER_EPOCH
    got = _rates(tmp_path, "{ block_id: training/scheduler/cosine }")
    want = _torch_rates(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=total),
                        total)  # fmt: skip
    assert got == pytest.approx(want, rel=1e-6, abs=1e-9)
