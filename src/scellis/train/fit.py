"""``fit`` and ``run`` (train layer): the async event stream of a run, and its sync driver.

The browser's worker iterates ``fit`` with ``async for``; the CLI calls ``run``, which
drives the same generator with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import time

from ..base.errors import ScellisError
from .data import epoch_batches
from .events import EarlyStop, Epoch, Info, RunWarning
from .fit_config import FitConfig
from .loop import _Run
from .state import TrainState


async def fit(
    model,
    loss,
    optimizer,
    data,
    *,
    scheduler=None,
    state: TrainState | None = None,
    resume: dict | None = None,
    should_stop=None,
    **options,
):
    """Train ``model`` on ``data``, yielding events (train/events.py): ``fit_loop`` with
    a ``FitConfig`` made from the keyword ``options`` (its fields: ``epochs`` is
    required, ``determinism_tier`` too). Bad options raise when the stream is first
    iterated, as any other error of the run does."""
    events = fit_loop(
        model, loss, optimizer, data, FitConfig(**options),
        scheduler=scheduler, state=state, resume=resume, should_stop=should_stop,
    )  # fmt: skip
    try:
        async for ev in events:
            yield ev
    finally:
        await events.aclose()


async def fit_loop(
    model,
    loss,
    optimizer,
    data,
    config: FitConfig,
    *,
    scheduler=None,
    state: TrainState | None = None,
    resume: dict | None = None,
    should_stop=None,
):
    """Train ``model`` on ``data`` as ``config`` says, yielding events (train/events.py).

    ``config.eval_every`` N evaluates on ``val_data`` every N steps (without it, at each
    epoch's end when ``val_data`` is given). A ``ReduceOnPlateau`` scheduler is fed
    ``config.plateau_metric``; any other scheduler steps once per step. ``state``
    continues a live ``TrainState``; ``resume`` loads a ``TrainState.state_dict()``
    first. ``config.max_steps`` caps the total steps.
    Steps run as a recorded dispatch schedule where the device and the step allow it
    (train/replay.py; bitwise the eager steps): by default on a device with a dispatch
    list, ``replay=True`` on any (one without says why), ``replay=False`` never. Each
    reason a step ran eagerly instead is told once, in an ``info`` event; the ``end``
    event's ``replay`` says how many steps replayed and why any did not.
    ``should_stop()`` is asked after every step (once its log point and validation,
    when it has them, are done): when it answers true the run ends there, with a last
    log of the partial window, and ``end`` says ``stopped_by_user``. ``config.metrics``
    are computed at every validation pass, and early stopping or reduce_on_plateau may
    watch them (``val_mae``...). A run with ``val_data`` always ends with a validation
    pass of its last step (unless stopped). ``config.augment`` transforms each training
    batch's ``x`` from the Philox ``augment`` stream at the step's counter; validation
    batches are never augmented.
    """
    c = config
    ts = state if state is not None else TrainState(model, optimizer, scheduler, seed=c.seed)
    if ts.model is not model or ts.optimizer is not optimizer:
        raise ScellisError("state= belongs to another model or optimizer")
    if scheduler is not None and ts.scheduler is not scheduler:
        raise ScellisError("state= holds another scheduler than scheduler=")
    if resume is not None:
        ts.load_state_dict(resume)
    r = _Run(ts, loss, data, c)
    t0 = time.perf_counter()
    yield r.start_event()
    if r.prec.fallback:
        yield RunWarning(message=r.prec.note)
    if r.tier.note:
        yield RunWarning(message=r.tier.note)
    model.train()
    stop = user_stop = False

    def asked() -> bool:
        nonlocal user_stop
        user_stop = user_stop or bool(should_stop is not None and should_stop())
        return user_stop

    while ts.epoch < c.epochs and not stop:
        for x, y in epoch_batches(data, ts.epoch, ts.seed, ts.batch):
            if c.augment is not None:  # keyed by (seed, step): a resumed run draws the same
                x = c.augment.apply(x, ts.seed, ts.step)
            r.step(x, y)
            # the batch goes before the next is made (and before a validation pass): two
            # batches are never co-resident, as the memory plan counts them
            del x, y
            ts.step += 1
            for why in r.replay.untold() if r.replay is not None else ():
                yield Info(message=f"replay: step {ts.step} ran eagerly: {why}", step=ts.step)
            ts.batch += 1
            if r.scheduler is not None and not r.plateau:
                r.scheduler.step()
            if ts.step % c.log_every == 0:
                ev = await r.log()
                stop = r.feed("loss", ev["loss"], ev)
                yield ev
            if not stop and c.eval_every is not None and ts.step % c.eval_every == 0:
                ev = await r.evaluate()
                stop = r.feed_eval(ev)
                yield ev
            stop = asked() or stop  # after this step's log and validation, if it has them
            if c.max_steps is not None and ts.step >= c.max_steps and not stop:
                stop, r.stop_reason = True, ""
                break
            if stop:
                break
        else:
            ts.epoch, ts.batch = ts.epoch + 1, 0
            yield Epoch(epoch=ts.epoch, step=ts.step)
            if c.eval_every is None and c.val_data is not None:
                ev = await r.evaluate()
                stop = r.feed_eval(ev)
                yield ev
                stop = asked() or stop
        if stop and r.stop_reason:
            yield EarlyStop(
                step=ts.step, epoch=ts.epoch, reason=r.stop_reason, best=ts.early.get("best")
            )
        if c.max_steps is not None and ts.step >= c.max_steps:
            break
    if r.window["steps"]:
        yield await r.log()
    if c.val_data is not None and r.last_eval_step != ts.step and not user_stop:
        ev = await r.evaluate()  # the run's last state is always validated
        r.feed_eval(ev)
        yield ev
    yield r.end_event(time.perf_counter() - t0, stopped_by_user=user_stop)
    if r.replay is not None:
        r.replay.close()


def run(*args, on_event=None, **kwargs) -> dict:
    """Drive ``fit`` to completion synchronously (the CLI); returns the ``end`` summary.
    ``on_event`` is called with every event."""

    async def main():
        last = None
        async for ev in fit(*args, **kwargs):
            if on_event is not None:
                on_event(ev)
            last = ev
        return last

    return asyncio.run(main())
