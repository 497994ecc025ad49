"""torch.optim.LBFGS (optim layer): limited-memory BFGS over the parameters as one flat
vector, with a fixed step (torch's default, ``line_search_fn=None``).

Written over tensor ops as torch writes it, step for step: the two-loop recursion
over the last ``history_size`` curvature pairs, the first step scaled by
``min(1, 1 / |g|_1)``, the same stopping tests. The scalars of the recursion (dot
products, ratios) are read back to the host, where torch keeps them as 0-d tensors;
an LBFGS step reads the loss back anyway, through its closure. ``strong_wolfe``
line search is not offered: asking for it raises.
"""

from __future__ import annotations

from ..autograd import enable_grad, no_grad
from ..base.errors import ScellisError
from ..runtime import functional as F


class LBFGS:
    """``LBFGS(params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
    tolerance_change=1e-9, history_size=100, line_search_fn=None)``; ``step(closure)``
    re-evaluates the loss through ``closure`` and returns its first value."""

    def __init__(self, params, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):  # fmt: skip
        if line_search_fn is not None:
            raise ScellisError(
                f"LBFGS(line_search_fn={line_search_fn!r}) is not supported: leave it None "
                "(a fixed step of lr), or use Adam"
            )
        params = list(params)
        if params and isinstance(params[0], dict):
            raise ScellisError("LBFGS takes one list of parameters, not parameter groups")
        max_iter = int(max_iter)
        self.defaults = dict(lr=float(lr), max_iter=max_iter,
                             max_eval=int(max_eval) if max_eval else max_iter * 5 // 4,
                             tolerance_grad=float(tolerance_grad),
                             tolerance_change=float(tolerance_change),
                             history_size=int(history_size), line_search_fn=None)  # fmt: skip
        self.param_groups = [{"params": params, **self.defaults}]
        self.state: dict = {"func_evals": 0, "n_iter": 0}

    @property
    def _params(self) -> list:
        return self.param_groups[0]["params"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self._params:
            p.grad = None if set_to_none or p.grad is None else p.grad.zeros_like()

    def _flat_grad(self):
        return F.concat([(p.grad if p.grad is not None else p.zeros_like()).reshape((-1,))
                         for p in self._params])  # fmt: skip

    def _add(self, t: float, d) -> None:
        """Every parameter moved by ``t`` times its slice of the flat direction ``d``."""
        at = 0
        for p in self._params:
            n = int(p.numel)
            p.add_(d[at : at + n].reshape(p.shape), alpha=t)
            at += n

    def step(self, closure):
        """One LBFGS step of up to ``max_iter`` iterations (torch's loop, see module)."""
        g = self.param_groups[0]
        lr, max_iter, max_eval = g["lr"], g["max_iter"], g["max_eval"]
        tol_grad, tol_change = g["tolerance_grad"], g["tolerance_change"]
        st = self.state
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        st["func_evals"] += 1
        with no_grad():
            flat = self._flat_grad()
            if flat.abs().max().item() <= tol_grad:
                return orig_loss
            n_iter = 0
            while n_iter < max_iter:
                n_iter += 1
                st["n_iter"] += 1
                d = self._direction(flat, st, g["history_size"])
                st["prev_flat_grad"], st["prev_loss"] = flat.clone(), loss
                if st["n_iter"] == 1:
                    t = min(1.0, 1.0 / flat.abs().sum().item()) * lr
                else:
                    t = lr
                st["d"], st["t"] = d, t
                if (flat * d).sum().item() > -tol_change:
                    break
                self._add(t, d)
                done = False
                if n_iter != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat = self._flat_grad()
                    done = flat.abs().max().item() <= tol_grad
                    evals += 1
                    st["func_evals"] += 1
                if n_iter == max_iter or evals >= max_eval or done:
                    break
                if (d * t).abs().max().item() <= tol_change:
                    break
                if abs(loss - st["prev_loss"]) < tol_change:
                    break
        return orig_loss

    @staticmethod
    def _direction(flat, st, history_size: int):
        """The search direction: -g on the first iteration, else the two-loop recursion
        over the kept pairs (s, y), the pair of this step added if its curvature is
        positive."""
        if st["n_iter"] == 1:
            st["old_dirs"], st["old_stps"], st["ro"], st["H_diag"] = [], [], [], 1.0
            return -flat
        y = flat - st["prev_flat_grad"]
        s = st["d"] * st["t"]
        ys = (y * s).sum().item()
        dirs, stps, ro = st["old_dirs"], st["old_stps"], st["ro"]
        if ys > 1e-10:
            if len(dirs) == history_size:
                dirs.pop(0), stps.pop(0), ro.pop(0)
            dirs.append(y), stps.append(s), ro.append(1.0 / ys)
            st["H_diag"] = ys / (y * y).sum().item()
        al = [0.0] * len(dirs)
        q = -flat
        for i in range(len(dirs) - 1, -1, -1):
            al[i] = (stps[i] * q).sum().item() * ro[i]
            q = q - dirs[i] * al[i]
        r = q * st["H_diag"]
        for i in range(len(dirs)):
            be_i = (dirs[i] * r).sum().item() * ro[i]
            r = r + stps[i] * (al[i] - be_i)
        return r

    def state_dict(self) -> dict:
        return {"param_groups": [{k: v for k, v in self.param_groups[0].items()
                                  if k != "params"}]}  # fmt: skip

    def load_state_dict(self, sd: dict) -> None:
        self.param_groups[0].update(sd["param_groups"][0])
