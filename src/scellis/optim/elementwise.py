"""Adadelta, Adamax and Rprop (optim layer): torch.optim's updates written with tensor ops.

The catalog optimizers run one fused kernel per group; these two run the update as
a few elementwise ops per parameter under ``no_grad``, term for term as torch's
single-tensor loops, so they work on every device without kernels of their own. They
have torch's surface: ``param_groups``, ``state``, ``zero_grad``, ``step(closure)``,
``state_dict``/``load_state_dict`` and ``add_param_group``; the schedulers drive them
through ``param_groups`` like any other.
"""

from __future__ import annotations

from ..autograd import enable_grad, no_grad
from ..base.errors import ScellisError


def _groups(params, defaults: dict) -> list[dict]:
    params = list(params.parameters()) if hasattr(params, "parameters") else list(params)
    if params and isinstance(params[0], tuple):  # named_parameters()
        params = [p for _, p in params]
    if not params:
        raise ScellisError("optimizer got an empty parameter list")
    raw = params if isinstance(params[0], dict) else [{"params": params}]
    out = []
    for g in raw:
        group = {**defaults, **g}
        ps = group["params"]
        group["params"] = [ps] if hasattr(ps, "_buf") else list(ps)
        out.append(group)
    return out


class ElementwiseOptimizer:
    """torch's Optimizer surface over a per-parameter ``update(p, g, state, group)``."""

    defaults: dict = {}

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups = _groups(params, self.defaults)
        self.state: dict = {}

    def add_param_group(self, group: dict) -> None:
        self.param_groups.extend(_groups([group], self.defaults))

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad = p.grad.zeros_like()

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = -p.grad if group.get("maximize") else p.grad
                    if group.get("weight_decay"):
                        g = g + p.detach() * group["weight_decay"]
                    state = self.state.setdefault(p, {"step": 0})
                    state["step"] += 1
                    p.sub_(self.update(p.detach(), g, state, group))
        return loss

    def update(self, p, g, state: dict, group: dict):
        """The amount to subtract from ``p`` this step (state updated in place)."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        flat = [p for g in self.param_groups for p in g["params"]]
        at = {id(p): i for i, p in enumerate(flat)}
        state = {at[id(p)]: dict(s) for p, s in self.state.items() if id(p) in at}
        groups, at = [], 0
        for g in self.param_groups:
            n = len(g["params"])
            groups.append({**{k: v for k, v in g.items() if k != "params"},
                           "params": list(range(at, at + n))})  # fmt: skip
            at += n
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, sd: dict) -> None:
        flat = [p for g in self.param_groups for p in g["params"]]
        for g, saved in zip(self.param_groups, sd["param_groups"]):
            g.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {flat[int(i)]: dict(s) for i, s in sd["state"].items()}


class Adadelta(ElementwiseOptimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):  # fmt: skip
        if not 0.0 <= rho <= 1.0:
            raise ScellisError(f"Adadelta: rho must be in [0, 1], got {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))  # fmt: skip

    def update(self, p, g, state, group):
        rho, eps = group["rho"], group["eps"]
        sq = state.get("square_avg", p.zeros_like()) * rho + g * g * (1 - rho)
        acc = state.get("acc_delta", p.zeros_like())
        delta = (acc + eps).sqrt() / (sq + eps).sqrt() * g
        state["square_avg"], state["acc_delta"] = sq, acc * rho + delta * delta * (1 - rho)
        return delta * group["lr"]


class Adamax(ElementwiseOptimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 foreach=None, *, maximize=False, differentiable=False,
                 capturable=False):  # fmt: skip
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize))  # fmt: skip

    def update(self, p, g, state, group):
        b1, b2 = group["betas"]
        m = state.get("exp_avg", p.zeros_like())
        m = m + (g - m) * (1 - b1)  # torch's lerp
        u = (state.get("exp_inf", p.zeros_like()) * b2).maximum(g.abs() + group["eps"])
        state["exp_avg"], state["exp_inf"] = m, u
        clr = group["lr"] / (1 - b1 ** state["step"])
        return m / u * clr


class Rprop(ElementwiseOptimizer):
    """Resilient backprop: each element's step grows by ``etas[1]`` while its gradient
    keeps its sign and shrinks by ``etas[0]`` when it flips (that step is then skipped)."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):  # fmt: skip
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      maximize=maximize))  # fmt: skip

    def update(self, p, g, state, group):
        minus, plus = group["etas"]
        lo, hi = group["step_sizes"]
        prev = state.get("prev", p.zeros_like())
        size = state.get("step_size", p.full_like(group["lr"]))
        same = g * prev
        factor = same.full_like(plus).where(
            same > 0.0, same.full_like(minus).where(same < 0.0, 1.0)
        )
        size = (size * factor).clamp(lo, hi)
        g = g.where(same >= 0.0, 0.0)  # a flipped sign: no step, and no memory of it
        state["prev"], state["step_size"] = g, size
        return g.sign() * size
