"""The host-driven training loop (train layer): ``async fit`` yields events; ``run`` drives it.

A step only enqueues device work: forward (under the precision policy), backward of
the (scaled) loss, unscale, the device-side finite flag, clipping, the gated
optimizer update and the loss-scale update. The loss, the good-step and skip counts
and the scale accumulate in 0-d device tensors; the host reads them in one readback
per log point (every ``log_every`` steps, and once at the end for a partial window),
plus one per evaluation (the validation loss, which early stopping and
reduce_on_plateau need on the host). Nothing else is read back.

Events are the typed classes of ``train/events.py``: ``start``, ``warning``, ``log``
(the window's mean loss, the rate the last step used, samples/s over the window
including the device time since the last readback), ``eval``, ``epoch``,
``early_stop`` and the final ``end`` summary.
"""

from __future__ import annotations

import time
from functools import partial

from ..autograd import no_grad
from ..catalog.clip import clipper
from ..catalog.sched import ReduceOnPlateau
from ..devices.kernel_choice import choosing
from ..ops.composites import stack
from ..runtime.creation import full, zeros
from ..runtime.dispatch import apply_inplace
from ..runtime.tensor import Tensor
from .data import batch_rows
from .determinism import resolve_tier
from .evaluation import validation_pass
from .events import End, Eval, Log, Start
from .fit_config import FitConfig
from .guard import StepStats, loop_update
from .precision import resolve_precision
from .replay import TrainReplay, replays
from .state import TrainState
from .step import train_step


class _Run:
    """One fit call's context: the state, the policy and the device-side accumulators."""

    def __init__(self, ts: TrainState, loss, data, config: FitConfig):
        self.ts, self.loss, self.data, self.config = ts, loss, data, config
        self.model, self.optimizer, self.scheduler = ts.model, ts.optimizer, ts.scheduler
        self.device = ts.device
        self.tier = resolve_tier(config.determinism_tier)
        self.prec = resolve_precision(config.precision, self.device)
        ts.scaler.configure(self.prec, self.device)
        self.clip = clipper(config.grad_clip)
        self.early = config.early_stopping
        self.plateau = isinstance(self.scheduler, ReduceOnPlateau)
        self.guard = config.skip_nonfinite or ts.scaler.dynamic
        self.readbacks = 0
        self.last_eval_step = None  # the step of the last validation pass
        self.acc = None  # device tensors: loss sum, good steps, skipped total
        self.window = {"steps": 0, "samples": 0, "t0": time.perf_counter()}
        self.last: Log | dict = {}  # the last log event
        self.stop_reason = ""
        self.step_lr = self.optimizer.param_groups[0]["lr"]  # the rate the last step used
        # steps as a recorded schedule (train/replay.py): where the device can record
        # (None) or as asked (True: a device that cannot says so in the end event)
        self.replay = TrainReplay(self) if replays(config.replay, self.device) else None

    # -- the step: device work only --
    def step(self, x, y) -> None:
        # the tier's kernels (train.determinism.KERNELS, devices.kernel_choice: reordered,
        # fused and subgroup variants alike); a recorded step keeps them
        with choosing(self.tier.kernels):
            if self.replay is not None:
                self.replay.step(self, x, y)  # the recorded schedule, or this eager step
                return
            self.eager_step(x, y)

    def host_enter(self) -> None:
        self.step_lr = self.optimizer.param_groups[0]["lr"]
        self.ts.enter_step()

    def count(self, x) -> None:
        self.window["steps"] += 1
        self.window["samples"] += batch_rows(x)

    def eager_step(self, x, y) -> None:
        scaler = self.ts.scaler
        self.host_enter()
        scale = scaler.scale if scaler.active else None
        update = partial(loop_update, scale=scale, guard=self.guard, scaler=scaler)
        # the one step function (train/step.py): the memory planner traces it too
        value, ok = train_step(
            self.model, self.loss, self.optimizer, (x,), y,
            update=update, clip=self.clip, compute=self.prec.compute, scale=scale,
        )  # fmt: skip
        with no_grad():
            self._accumulate(value.detach(), ok)
        self.count(x)

    def _accumulate(self, value: Tensor, ok) -> None:
        if self.acc is None:
            # a resumed run continues its skip count: the checkpoint's metrics carry it
            done = float(self.ts.metrics.get("skipped_total") or 0)
            self.acc = [zeros((), value.dtype, self.device) for _ in range(2)]
            self.acc.append(full((), done, value.dtype, self.device))
        total, good, skipped = self.acc
        if isinstance(ok, StepStats):  # the fused phase: one in-place op, no new tensors
            apply_inplace("step_tally", (value, ok.stats), tuple(self.acc))
            return
        if ok is None:
            self.acc = [total + value, good + 1.0, skipped]
        else:
            okf = ok.cast(value.dtype)
            self.acc = [total + value.where(ok, 0.0), good + okf, skipped + (1.0 - okf)]

    async def _read(self, t: Tensor):
        self.readbacks += 1
        return await t.read()

    # -- readback points --
    async def log(self) -> Log:
        ts, w = self.ts, self.window
        total, good, skipped = self.acc
        scale = self.ts.scaler.scale.cast(total.dtype)
        vals = await self._read(stack([total, good, skipped, scale]))
        now = time.perf_counter()
        loss = vals[0] / vals[1] if vals[1] else None  # None: every step was skipped
        skipped_total = int(vals[2])
        ev = Log(
            step=ts.step,
            epoch=ts.epoch,
            batch=ts.batch,
            loss=loss,
            lr=self.step_lr,
            throughput=w["samples"] / max(now - w["t0"], 1e-9),
            samples=w["samples"],
            skipped=w["steps"] - int(vals[1]),
            skipped_total=skipped_total,
            loss_scale=vals[3],
        )
        if self.replay is not None:
            self.replay.reset_window(self.acc)  # the schedule reads these very buffers
        else:
            self.acc = [
                zeros((), total.dtype, self.device),
                zeros((), total.dtype, self.device),
                skipped,
            ]
        self.window = {"steps": 0, "samples": 0, "t0": time.perf_counter()}
        self.last = ev
        ts.metrics.update(loss=loss, skipped_total=skipped_total, loss_scale=vals[3])
        return ev

    async def evaluate(self) -> Eval:
        ts = self.ts
        # the tier's reduction variants; its training kernels are the steps' alone
        with choosing(self.tier.kernels.for_inference()):
            val, metrics = await validation_pass(
                self.model, self.loss, self.config.val_data, seed=ts.seed,
                compute=self.prec.compute, metrics=self.config.metrics, read=self._read,
                forward=self.config.forward,
            )  # fmt: skip
        ts.metrics["val_loss"] = val
        self.last_eval_step = ts.step
        ev = Eval(step=ts.step, epoch=ts.epoch, val_loss=val, metrics=metrics)
        if metrics is not None:
            ts.metrics.update({f"val_{k}": v for k, v in metrics.items()})
        return ev

    def feed_eval(self, ev: Eval) -> bool:
        """Feed a validation pass's loss and metrics; True: stop the run."""
        stop = self.feed("val_loss", ev.val_loss, ev)
        for name, value in (ev.metrics or {}).items():
            stop = self.feed(f"val_{name}", value, ev) or stop
        return stop

    def feed(self, metric: str, value: float, ev: Log | Eval) -> bool:
        """Give ``value`` to reduce_on_plateau and early stopping; True: stop the run."""
        if value is None:  # a window of skipped steps has no loss to judge
            return False
        if self.plateau and metric == self.config.plateau_metric:
            before = self.optimizer.param_groups[0]["lr"]
            self.scheduler.step(value)
            ev.lr = self.optimizer.param_groups[0]["lr"]
            ev.lr_reduced = ev.lr < before
        if self.early is not None and metric == self.early.metric:
            stop = self.early.feed(value, self.ts.early)
            ev.best, ev.bad = self.ts.early["best"], self.ts.early["bad"]
            if stop:
                self.stop_reason = (
                    f"{metric} did not improve by more than "
                    f"{self.early.min_delta} for {self.early.patience} checks"
                )
            return stop
        return False

    def start_event(self) -> Start:
        data = self.data
        return Start(
            device=self.device.name,
            tier=self.tier.record(),
            precision=self.prec.record(),
            epochs=self.config.epochs,
            steps_per_epoch=len(data) if hasattr(data, "__len__") else None,
            step=self.ts.step,
            epoch=self.ts.epoch,
            seed=self.ts.seed,
            parameters=sum(p.numel for p in self.model.parameters()),
        )

    def end_event(self, wall: float, *, stopped_by_user: bool = False) -> End:
        ts = self.ts
        return End(
            steps=ts.step,
            epoch=ts.epoch,
            batch=ts.batch,
            loss=self.last.get("loss"),
            val_loss=ts.metrics.get("val_loss"),
            best=ts.early.get("best"),
            stopped_early=bool(self.stop_reason),
            reason=self.stop_reason,
            skipped_total=ts.metrics.get("skipped_total", 0),
            loss_scale=ts.metrics.get("loss_scale"),
            lr=self.step_lr,
            readbacks=self.readbacks,
            wall_s=wall,
            tier=self.tier.record(),
            precision=self.prec.record(),
            replay=self.replay.record() if self.replay is not None else None,
            stopped_by_user=stopped_by_user,
        )
