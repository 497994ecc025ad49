"""A step whose first run fills a cache (a rotary decoder's position tables) differs
from the steps after it, yet the run replays them: the plan must count the replayed
steps' residency all the same. The oracle is the run itself, on lavapipe: it replays,
and the plan says so in its replay bytes."""

from __future__ import annotations

import asyncio

import pytest

from qlorarecords import llama_config, qlora_record
from scellis.ir.limits import resolve
from scellis.ir.plan import make_plan, steps_repeat
from scellis.ir.trace import trace
from scellis.run.options import RunOptions
from scellis.run.prepare import check_record
from scellis.run.session import start_run


def _record(folder) -> str:
    return qlora_record(folder, llama_config(32, 64, 16), "test/rope@1", rank=2, seed=5)


@pytest.mark.webgpu
def test_a_step_that_fills_a_cache_first_is_planned_as_replayed(gpu, tmp_path):
    text = _record(tmp_path)
    rec = check_record(text, "rope.sml", base_dir=tmp_path)
    tr = trace(rec, device="webgpu")
    assert not steps_repeat(tr)  # the first step makes the position tables
    assert steps_repeat(trace(rec, device="webgpu", steps=3), skip=1)
    target = resolve("webgpu-spec", "4GiB")
    plan = make_plan(rec, target, replay=True)
    assert plan.replay_bytes > 0
    assert make_plan(rec, target, replay=False).replay_bytes == 0

    ends = []

    async def drive(s):
        async for ev in s.events():
            if ev.kind == "end":
                ends.append(ev.to_dict())

    options = RunOptions(max_steps=6, log_every=1, validate=False)
    asyncio.run(drive(start_run(text.encode(), "rope.sml", options=options, device=gpu,
                                base_dir=tmp_path)))  # fmt: skip
    assert ends[0]["replay"]["replayed_steps"] > 0
