"""The optimizer driver (catalog layer): param groups over flat buffers, one fused op a step.

Each parameter group owns one flat parameter buffer (its parameters are views of
it), one flat buffer per state (moments) and one flat gradient buffer. A step, per
group: gather the gradients into the gradient buffer (``flat_gather``; skipped when
the gradients already are consecutive views of one buffer), then one fused
``<name>_update`` rewrites parameters and state in place. Per-parameter step counts
follow torch: a parameter without a gradient is skipped and keeps its count, so a
group whose parameters disagree runs one gather + update per run of neighbours
that agree.

Dispatches per group and step on WebGPU, in the usual case (every parameter has a
contiguous gradient): ``ceil(N / (maxStorageBuffersPerShaderStage - 2))`` gathers for
N parameters (one for N <= 30 on a 32-binding adapter) plus one update; a
non-contiguous gradient adds one copy. Where the step's kernel choice fuses training
kernels (the ``fast`` tier, ``devices.kernel_choice``), the update reads the gradients
where they lie instead (the multi-tensor form of the update op): one dispatch per
group for up to about 27 gradients (AdamW) on such an adapter, and no gather. On the
other tiers the gather disappears once the tape accumulates each leaf's gradient
straight into its span of the group's flat gradient buffer (the gradient "home" this
driver already recognises), leaving one dispatch per group and step.

The parameter objects stay the caller's: each is pointed at its span of the flat
buffer, so the module, the caller and the optimizer hold the same objects, and a
later in-place load or move reaches the optimizer (a move re-gathers the group).

Given a Module, an optimizer takes only the parameters with ``requires_grad`` (frozen
ones, see ``catalog.peft``, get no flat span, no gradient buffer and no state).

Options live in ``param_groups`` (a list of dicts, as in torch): a scheduler sets
``group["lr"]`` between steps and the next step passes it as a kernel scalar.
"""

from __future__ import annotations

import dataclasses

from ...autograd import enable_grad, no_grad
from ...base.errors import ScellisError
from ...devices.kernel_choice import current as kernel_choice
from ...ops.optim import state_names
from ...runtime.creation import tensor as _tensor
from ...runtime.creation import zeros
from ...runtime.dispatch import apply, apply_inplace
from ...runtime.inplace import transfer
from ...runtime.tensor import Tensor
from ..host_steps import noted
from ..registry import check_config
from .flat import flat_view, flatten_in_place, span, view_of


class _Group:
    """A parameter group's buffers: flat params, flat grads, flat state, step counts."""

    def __init__(self, names: list[str], params: list[Tensor], flat: Tensor):
        self.names, self.params, self.flat = names, params, flat
        self.starts = [p.offset - flat.offset for p in params]
        self.steps = [0] * len(params)
        self.state: dict[str, Tensor] = {}
        self.grad_flat: Tensor | None = None
        # run [i, j) -> its gradient count where the last step updated it in the
        # multi-tensor form (a replayed step's attrs must say so too)
        self.multi: dict[tuple[int, int], int] = {}

    def buffer(self, name: str) -> Tensor:
        if name not in self.state:
            self.state[name] = zeros((self.flat.numel,), self.flat.dtype, self.flat.device)
        return self.state[name]

    def runs(self) -> list[tuple[int, int]]:
        """Maximal runs [i, j) of neighbouring parameters with a gradient and one step count."""
        out, i, n = [], 0, len(self.params)
        while i < n:
            if self.params[i].grad is None:
                i += 1
                continue
            j = i + 1
            while j < n and self.params[j].grad is not None and self.steps[j] == self.steps[i]:
                j += 1
            out.append((i, j))
            i = j
        return out

    def stop(self, j: int) -> int:
        return self.starts[j - 1] + self.params[j - 1].numel

    def rehome(self) -> None:
        """Gather the parameters into a new flat buffer when something gave them other
        storage (a move to another device or dtype, a load that could not write in
        place); the state moves with them. Nothing happens in the usual case."""
        live = flat_view(self.params)
        if live is not None and live._buf is self.flat._buf and live.offset == self.flat.offset:
            return
        self.flat = flatten_in_place(self.params)
        self.starts = [p.offset - self.flat.offset for p in self.params]
        self.state = {
            k: transfer(v, self.flat.device, self.flat.dtype) for k, v in self.state.items()
        }
        self.grad_flat = None


def _named(items) -> tuple[list[str], list[Tensor]]:
    names, params = [], []
    for k, item in enumerate(items):
        name, p = item if isinstance(item, tuple) else (str(k), item)
        if not isinstance(p, Tensor):
            raise ScellisError(f"parameter {name!r} is a {type(p).__name__}, not a Tensor")
        names.append(name)
        params.append(p)
    return names, params


def _trainable(module) -> list[tuple[str, Tensor]]:
    """A module's parameters that require grad: frozen ones get no flat span and no state."""
    return [(n, p) for n, p in module.named_parameters() if p.requires_grad]


class Optimizer:
    """Base of every optimizer: subclasses name their ``op`` and ``config`` and map a
    group's options to the op's attrs in ``attrs``."""

    op: str = ""
    config: type = type(None)

    def __init__(self, params, config=None, **options):
        cfg = config if config is not None else self.config()
        cfg = dataclasses.replace(cfg, **options) if options else cfg
        check_config(cfg)
        self.validate(cfg)
        self.defaults = dataclasses.asdict(cfg)
        self.param_groups: list[dict] = []
        self._groups: list[_Group] = []
        self.step_count = 0
        self._stats = False  # the last update read grad_stats' result (step_with)
        if hasattr(params, "named_parameters") and hasattr(params, "set_parameter"):
            self._add(_trainable(params), {})
            return
        items = list(params)
        if items and all(isinstance(g, dict) for g in items):
            for g in items:
                self.add_param_group(g)
        else:
            self._add(items, {})

    # -- groups --
    def add_param_group(self, group: dict) -> None:
        """A group: ``{"params": tensors | (name, tensor) pairs | Module, **options}``."""
        group = dict(group)
        params = group.pop("params")
        items = _trainable(params) if hasattr(params, "set_parameter") else list(params)
        self._add(items, group)

    def _add(self, items, overrides: dict) -> None:
        unknown = set(overrides) - set(self.defaults) - {"initial_lr"}
        if unknown:
            raise ScellisError(f"unknown option(s) {sorted(unknown)} for {type(self).__name__}")
        opts = {**self.defaults, **overrides}
        cfg = dataclasses.replace(self.config(), **{k: opts[k] for k in self.defaults})
        check_config(cfg)
        self.validate(cfg)
        names, params = _named(items)
        flat = flat_view(params)
        if flat is None:
            flat = flatten_in_place(params)
        opts["params"] = params
        self.param_groups.append(opts)
        self._groups.append(_Group(names, params, flat))

    def validate(self, cfg) -> None:
        """Cross-field checks a subclass adds (ranges are checked from the Config)."""

    def attrs(self, group: dict, step: int) -> dict:
        raise NotImplementedError

    # -- the step --
    def step(self, closure=None):
        """One update of every parameter that has a gradient: a gather and one fused op
        per run of parameters (one run per group in the usual case). ``closure``
        (torch's) recomputes the loss with gradients first; its loss is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._update()
        return loss

    def step_if(self, ok: Tensor) -> None:
        """``step()`` that the device carries out only where ``ok`` (a 0-d bool device
        tensor, the overflow guard's finite flag) is True: the fused update ops take it
        as their gate, so a skipped step leaves parameters and state bitwise unchanged.
        The host's step counts advance either way (the host never learns the flag)."""
        self._update(ok)

    def step_with(self, stats: Tensor) -> None:
        """``step()`` reading ``grad_stats``' result (ops.fused_step): nothing is written
        where its finite flag is 0, and each gradient element is scaled by its clip
        factor as the update reads it (the ``fast`` tier's optimizer phase)."""
        self._update(stats, stats=True)

    def rate_stepped(self, scheduler) -> None:
        """A scheduler of this optimizer stepped (see ``catalog.host_steps``)."""
        noted(scheduler)

    @no_grad()
    def _update(self, gate: Tensor | None = None, stats: bool = False) -> None:
        noted(self)
        self._stats = stats  # as the recorded step ran it (host_step's attrs say so too)
        for opts, grp in zip(self.param_groups, self._groups):
            grp.rehome()
            grp.multi = {}
            for i, j in grp.runs():
                a, b = grp.starts[i], grp.stop(j)
                attrs = self.attrs(opts, grp.steps[i] + 1)
                grads = self._gradients(grp, i, j)
                targets = [span(grp.flat, a, b)]
                targets += [span(grp.buffer(s), a, b) for s in state_names(self.op, attrs)]
                if len(grads) > 1:
                    attrs["grads"] = len(grads)
                    grp.multi[(i, j)] = len(grads)
                if stats:
                    attrs["stats"] = True
                inputs = grads if gate is None else (*grads, gate)
                apply_inplace(self.op, inputs, tuple(targets), **attrs)
                for k in range(i, j):
                    grp.steps[k] += 1
        self.step_count += 1

    def host_step(self) -> list[dict]:
        """The host half of ``step()``, for a replayed step (runtime.replay): the attrs
        of each run's update in dispatch order, with the step counts advanced as
        ``step()`` advances them. No device work. An optimizer whose own ``step`` writes
        its update with ordinary ops (a user's, through the catalog API) has no fused op
        to patch: its update was recorded with the step and replays as it ran (a host
        value that changes each step makes the traces differ, so it never replays), and
        only its step count advances here."""
        if type(self).attrs is Optimizer.attrs:
            self.step_count += 1
            return []
        out = []
        for opts, grp in zip(self.param_groups, self._groups):
            for i, j in grp.runs():
                attrs = self.attrs(opts, grp.steps[i] + 1)
                if (i, j) in grp.multi:  # as the recorded step ran it
                    attrs["grads"] = grp.multi[(i, j)]
                if self._stats:
                    attrs["stats"] = True
                out.append(attrs)
                for k in range(i, j):
                    grp.steps[k] += 1
        self.step_count += 1
        return out

    def _gradients(self, grp: _Group, i: int, j: int) -> tuple[Tensor, ...]:
        """What the update of run [i, j) reads: one flat gradient (gathered, or already
        one flat range), or, where the step's kernel choice fuses training kernels
        (the ``fast`` tier) and that pays on the device, every gradient where it lies,
        for the multi-tensor update."""
        if j - i > 1 and kernel_choice().fuses_on("optimizer", grp.flat.device):
            grads = self._checked(grp, i, j)
            if flat_view(grads) is None:
                return tuple(g if g.is_contiguous() else apply("copy", (g,)) for g in grads)
        return (self._gather(grp, i, j),)

    def _checked(self, grp: _Group, i: int, j: int) -> list[Tensor]:
        grads = [grp.params[k].grad for k in range(i, j)]
        for k, g in zip(range(i, j), grads):
            if tuple(g.shape) != tuple(grp.params[k].shape) or g.dtype != grp.flat.dtype:
                raise ScellisError(
                    f"the gradient of {grp.names[k]!r} has shape {g.shape} "
                    f"{g.dtype}; the parameter is {grp.params[k].shape}"
                )
        return grads

    def _gather(self, grp: _Group, i: int, j: int) -> Tensor:
        grads = self._checked(grp, i, j)
        already = flat_view(grads)
        if already is not None and already._buf is not grp.flat._buf:
            return already  # gradients that are one flat range need no gather
        if grp.grad_flat is None:
            grp.grad_flat = zeros((grp.flat.numel,), grp.flat.dtype, grp.flat.device)
        out = span(grp.grad_flat, grp.starts[i], grp.stop(j))
        grads = [g if g.is_contiguous() else apply("copy", (g,)) for g in grads]
        apply_inplace("flat_gather", tuple(grads), (out,))
        return out

    def zero_grad(self, set_to_none: bool = True) -> None:
        for grp in self._groups:
            for p in grp.params:
                p.grad = None if set_to_none or p.grad is None else p.grad.zeros_like()

    # -- introspection and checkpoints --
    @property
    def lr(self) -> float:
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value: float) -> None:
        for g in self.param_groups:
            g["lr"] = value

    def state_of(self, param: Tensor) -> dict:
        """``param``'s step count and state, as views of the flat buffers (torch's
        ``optimizer.state[param]``)."""
        for grp in self._groups:
            for k, p in enumerate(grp.params):
                if p is param:
                    out: dict = {"step": grp.steps[k]}
                    for name, buf in grp.state.items():
                        out[name] = view_of(buf, grp.starts[k], p.shape)
                    return out
        raise KeyError("not a parameter of this optimizer")

    def state_dict(self, snapshot: bool = True) -> dict:
        """Options, per-parameter step counts and copies of the flat state buffers (on the
        device: no readback), keyed by group; parameter names say what they cover.
        ``snapshot=False``: the live buffers, for a reader done before the next step."""
        groups = []
        with no_grad():
            for opts, grp in zip(self.param_groups, self._groups):
                g = {
                    k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in opts.items()
                    if k != "params"
                }
                g["names"] = list(grp.names)
                g["shapes"] = [list(p.shape) for p in grp.params]
                g["steps"] = list(grp.steps)
                g["state"] = {
                    k: apply("copy", (v,)) if snapshot else v for k, v in grp.state.items()
                }
                groups.append(g)
        return {"step_count": self.step_count, "param_groups": groups}

    def load_state_dict(self, sd: dict) -> None:
        """Restore from ``state_dict()``; state values may be tensors or lists of floats."""
        if len(sd["param_groups"]) != len(self._groups):
            raise ScellisError(
                f"the state has {len(sd['param_groups'])} parameter groups, "
                f"this optimizer {len(self._groups)}"
            )
        for opts, grp, g in zip(self.param_groups, self._groups, sd["param_groups"]):
            shapes = [list(p.shape) for p in grp.params]
            if [list(s) for s in g["shapes"]] != shapes:
                raise ScellisError(f"parameter shapes differ: saved {g['shapes']}, here {shapes}")
            for k, v in g.items():
                if k in self.defaults or k == "initial_lr":
                    opts[k] = tuple(v) if isinstance(self.defaults.get(k), tuple) else v
            grp.steps = [int(s) for s in g["steps"]]
            grp.state = {k: self._restore(grp, v) for k, v in g["state"].items()}
        self.step_count = int(sd["step_count"])

    @staticmethod
    def _restore(grp: _Group, value) -> Tensor:
        n, dev, dt = grp.flat.numel, grp.flat.device, grp.flat.dtype
        if isinstance(value, Tensor) and value.device is dev and value.dtype == dt:
            t = apply("copy", (value.reshape((-1,)),))
        else:
            data = value.tolist() if isinstance(value, Tensor) else list(value)
            t = _tensor(data, device=dev, dtype=dt).reshape((-1,))
        if t.numel != n:
            raise ScellisError(f"a saved state buffer has {t.numel} values, the group {n}")
        return t
