"""The train state (train layer): everything a run needs to continue, as plain data.

``TrainState`` holds the live objects (model, optimizer, scheduler, loss scaler) and
the counters (epoch, step, batch within the epoch), the seed and the named Philox
streams. ``state_dict()`` is nested dicts, lists and numbers whose tensor leaves are
device copies (no readback: a checkpoint reads them when it writes);
``state_dict(snapshot=False)`` hands the live tensors instead, for a reader that is done
with them before the next step (a checkpoint: copies of every weight and optimizer
buffer at once would double the run's device memory for its duration);
``load_state_dict`` takes that back, with tensors or nested lists as leaves.
"""

from __future__ import annotations

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..base.rng import Generator
from ..catalog.optim.flat import view_of
from ..runtime.creation import generator, tensor
from ..runtime.dispatch import apply, apply_inplace
from ..runtime.tensor import Tensor
from .precision import LossScaler

STREAMS = ("shuffle", "dropout", "augment")
VERSION = 1


def _copy(t: Tensor) -> Tensor:
    return apply("copy", (t,))


def _same(t: Tensor) -> Tensor:
    return t


class TrainState:
    def __init__(self, model, optimizer, scheduler=None, *, seed: int = 0):
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.scaler = LossScaler()
        self.seed = int(seed)
        self.epoch = 0  # the epoch being run (or next to run)
        self.step = 0  # optimizer steps attempted so far (skipped ones included)
        self.batch = 0  # batches of ``epoch`` already consumed
        self.streams = {name: Generator(self.seed, name) for name in STREAMS}
        self.early: dict = {}  # early-stopping counters, filled by the loop
        self.metrics: dict = {}  # the last logged values

    @property
    def device(self):
        params = self.model.parameters()
        if not params:
            raise ScellisError("the model has no parameters to train")
        return params[0].device

    def enter_step(self) -> None:
        """Point the runtime's dropout stream at this step: masks depend on (seed, step)."""
        g = self.streams["dropout"]
        g.step, g.draw = self.step, 0
        live = generator("dropout")
        live.seed, live.step, live.draw = g.seed, g.step, g.draw
        self.streams["shuffle"].step = self.epoch
        # augmentation draws at the step's counter too (train/augment.py)
        a = self.streams["augment"]
        a.step, a.draw = self.step, 0

    # -- plain data --
    @no_grad()
    def state_dict(self, snapshot: bool = True) -> dict:
        keep = _copy if snapshot else _same
        return {
            "version": VERSION,
            "seed": self.seed,
            "epoch": self.epoch,
            "step": self.step,
            "batch": self.batch,
            "model": {k: keep(v) for k, v in self.model.live_state().items()},
            "optimizer": self.optimizer.state_dict(snapshot),
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "loss_scale": self.scaler.state_dict(snapshot),
            "rng": {k: g.state() for k, g in self.streams.items()},
            "early_stopping": dict(self.early),
            "metrics": dict(self.metrics),
        }

    @no_grad()
    def load_state_dict(self, sd: dict) -> None:
        if sd.get("version") != VERSION:
            raise ScellisError(f"train state version {sd.get('version')!r}; expected {VERSION}")
        write_weights(self.model, sd["model"])
        self.optimizer.load_state_dict(sd["optimizer"])
        if (sd["scheduler"] is None) != (self.scheduler is None):
            raise ScellisError("the saved state and this run disagree on having a scheduler")
        if self.scheduler is not None:
            self.scheduler.load_state_dict(sd["scheduler"])
        self.scaler.load_state_dict(sd["loss_scale"], self.device)
        self.seed, self.epoch = int(sd["seed"]), int(sd["epoch"])
        self.step, self.batch = int(sd["step"]), int(sd["batch"])
        # a state saved before a stream existed starts that stream at its origin
        self.streams = {name: Generator(self.seed, name) for name in STREAMS}
        self.streams.update({k: Generator.from_state(v) for k, v in sd["rng"].items()})
        self.early = dict(sd.get("early_stopping") or {})
        self.metrics = dict(sd.get("metrics") or {})


def write_weights(model, weights: dict) -> None:
    """Overwrite every parameter and buffer of ``model`` in place with ``weights`` (by
    dotted name; the same names, no more and no fewer)."""
    live = model.live_state()
    missing, extra = set(live) - set(weights), set(weights) - set(live)
    if missing or extra:
        raise ScellisError(
            f"the saved model differs: missing {sorted(missing)}, unexpected {sorted(extra)}"
        )
    for k, t in live.items():
        _write(t, weights[k], k)


def _write(target: Tensor, value, key: str) -> None:
    """Overwrite ``target``'s storage in place (parameters are views of the optimizer's
    flat buffers, which must stay the ones the optimizer updates)."""
    if isinstance(value, Tensor) and value.device is target.device:
        src = value
    else:
        src = tensor(
            value.tolist() if isinstance(value, Tensor) else value,
            device=target.device,
            dtype=target.dtype,
        )
    if tuple(src.shape) != tuple(target.shape):
        raise ScellisError(f"{key}: saved shape {tuple(src.shape)}, model {tuple(target.shape)}")
    if not target.is_contiguous():
        raise ScellisError(f"{key}: cannot load into a non-contiguous tensor")
    if not target.dtype.is_float:  # integer codes (a quantised weight): no optimizer view
        target.copy_(src.cast(target.dtype))
        return
    src = apply("copy", (src.cast(target.dtype).reshape((-1,)),))
    apply_inplace("flat_gather", (src,), (view_of(target, 0, (target.numel,)),))
