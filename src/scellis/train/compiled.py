"""``scellis.compile(step)`` (train layer): a user-written training step, replayed.

A torch-style loop (``loss = loss_fn(model(x), y); opt.zero_grad(); loss.backward();
opt.step()``) written as one function runs eagerly for its first call (which makes the
optimizer state and gradient buffers), is recorded on its next two, and once those
traces agree (``runtime.replay``) every later call with inputs of the same shapes is
the recorded schedule: the inputs are copied into the recorded buffers, each optimizer
that stepped re-encodes its update scalars (step counts, the current rate) from the
host, each random op (dropout) takes the next draw of its Philox stream as eagerly, and
the kernels run. Results are those of the eager step, bit for bit: the same
kernels read the same values in the same order.

The function's Python runs only while it is recorded, so a call that cannot be the
schedule runs eagerly, with one warning saying why: inputs of other shapes (an
epoch's short last batch), a readback inside the step (``loss.item()`` belongs
outside it), work that changes between calls, a rate changed inside it (step a
scheduler after the call), or a device that keeps no dispatch list (the NumPy reference).
A replayed call returns the recorded call's output, whose buffer the next replay
rewrites: read it (``loss.item()``) before the next call.
"""

from __future__ import annotations

import warnings

from ..base.errors import ScellisError
from ..catalog.host_steps import watching
from ..catalog.module import Module
from ..catalog.optim.base import Optimizer
from ..runtime.dispatch import default_device
from ..runtime.replay import StepReplay
from ..runtime.tensor import Tensor


class CompiledStep:
    def __init__(self, fn, warmup: int = 1):
        self.fn = fn
        self.warmup = warmup
        self.sr: StepReplay | None = None
        self.optimizers: list = []
        self.out = None
        self.calls = self.replayed = 0
        self._said: set[str] = set()

    @property
    def reason(self) -> str:
        """Why calls run eagerly ('' while they may replay)."""
        return self.sr.reason if self.sr is not None else ""

    def _say(self, why: str) -> None:
        if why and why not in self._said:
            self._said.add(why)
            warnings.warn(f"scellis.compile: this step runs eagerly: {why}", stacklevel=3)

    def __call__(self, *args):
        self.calls += 1
        feeds = [a for a in args if isinstance(a, Tensor)]
        device = feeds[0].device if feeds else default_device()
        if self.sr is None:
            return self._first(device, args)
        if self.sr.ready:
            why = self.sr.fits(feeds)
            if not why:
                patches = [p for o in self.optimizers for p in o.host_step()]
                self.sr.replay(feeds, patches)
                self.replayed += 1
                return self.out
            self._say(why)
        return self._eager(args, feeds)

    def _first(self, device, args):
        """The first call: eager, learning which optimizers the step drives."""
        with watching() as seen:
            out = self.fn(*args)
        self.optimizers = [o for o in seen if isinstance(o, Optimizer)]
        patched = {o.op for o in self.optimizers}
        self.sr = StepReplay(device, patched=patched, warmup=max(0, self.warmup - 1))
        if any(not isinstance(o, Optimizer) for o in seen) and not self.sr.reason:
            self._refuse(
                "the learning rate changes inside the step (a scheduler's step()): "
                "call it after the compiled step"
            )
        self._say(self.sr.reason)
        return out

    def _eager(self, args, feeds):
        was_ready = self.sr.ready
        staged = self.sr.stage(feeds)
        swap = {id(a): b for a, b in zip(feeds, staged)}
        args = tuple(swap.get(id(a), a) if isinstance(a, Tensor) else a for a in args)
        rates = _rates(self.optimizers)
        with watching() as seen, self.sr.eager(staged):
            out = self.fn(*args)
        stepped = [o for o in seen if isinstance(o, Optimizer)]
        inside = any(not isinstance(o, Optimizer) for o in seen)
        if (inside or _rates(self.optimizers) != rates) and not self.sr.reason:
            self._refuse(
                "the learning rate changes inside the step (a scheduler's step()): "
                "call it after the compiled step"
            )
        elif [id(o) for o in stepped] != [id(o) for o in self.optimizers] and not self.sr.reason:
            self._refuse("the optimizers that step change between calls")
        if self.sr.ready and not was_ready:
            self.out = out  # the recorded call's output: what replays rewrite
        self._say(self.sr.reason)
        return out

    def _refuse(self, why: str) -> None:
        self.sr.close()
        self.sr.reason = why


def _rates(optimizers) -> list:
    """Every param group's options the update reads from the host, of each optimizer."""
    return [[dict((k, v) for k, v in g.items() if k != "params") for g in o.param_groups]
            for o in optimizers]  # fmt: skip


class OptimizedModule(Module):
    """What ``torch.compile(model)`` returns: the model as the child ``_orig_mod``
    (so ``state_dict()`` keys start ``_orig_mod.``, as torch's do), every other
    attribute read from it. Its calls run the model eagerly: a forward alone is no
    step to replay (its backward and update happen outside it), and a replayed output
    would be rewritten by the next call where torch's stays."""

    def __init__(self, mod: Module):
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str):
        mod = self.__dict__.get("_orig_mod")
        if mod is None:
            raise AttributeError(name)
        return getattr(mod, name)


# torch.compile's keywords: how much to compile and with what; hints to Scellis
_TORCH_HINTS = ("fullgraph", "dynamic", "backend", "mode", "options", "disable")


def compile(fn=None, *, warmup: int = 1, **hints):  # noqa: A001 (torch's name)
    """``scellis.compile(step)`` or ``@scellis.compile``: the step replayed once its
    recorded calls agree (see the module's text). ``compile(model)`` wraps a module as
    torch's does (``OptimizedModule``). torch's keywords (``mode=``, ``backend=``...)
    are accepted and change nothing; ``disable=True`` returns ``fn`` itself."""
    unknown = sorted(set(hints) - set(_TORCH_HINTS))
    if unknown:
        raise ScellisError(f"scellis.compile: unknown keyword(s) {unknown}; it takes warmup= "
                           f"and torch.compile's {', '.join(_TORCH_HINTS)}")  # fmt: skip
    if fn is None:
        return lambda f: compile(f, warmup=warmup, **hints)
    if hints.get("disable"):
        return fn
    if isinstance(fn, Module):
        return OptimizedModule(fn)
    return CompiledStep(fn, warmup)
