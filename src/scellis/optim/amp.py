"""torch.amp's ``GradScaler`` (optim layer), beside ``autocast`` from the catalog.

``scaler.scale(loss).backward(); scaler.step(opt); scaler.update()`` as in torch:
the loss is multiplied by the scale, ``step`` divides the gradients back (once, also
through ``unscale_`` before clipping) and skips the optimizer's step when any is not
finite, ``update`` halves the scale after such a step and doubles it after
``growth_interval`` clean ones. The finite check reads one flag back per step.
"""

from __future__ import annotations

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..catalog.module_precision import autocast  # noqa: F401 (torch.amp.autocast)


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):  # fmt: skip
        self._scale = float(init_scale)
        self.growth_factor, self.backoff_factor = float(growth_factor), float(backoff_factor)
        self.growth_interval, self._enabled = int(growth_interval), bool(enabled)
        self._growth_tracker = 0
        self._found: dict[int, bool] = {}  # optimizer id -> a gradient was not finite

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    @no_grad()
    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (once per step), noting
        whether any is not finite."""
        if not self._enabled:
            return
        if id(optimizer) in self._found:
            raise ScellisError("unscale_() was already called on this optimizer since update()")
        inv, bad = 1.0 / self._scale, None
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.grad = p.grad * inv
                flag = (p.grad * 0.0 != 0.0).sum()  # inf * 0 and nan * 0 are nan
                bad = flag if bad is None else bad + flag
        self._found[id(optimizer)] = bool(bad is not None and bad.item() > 0)

    def step(self, optimizer, *args, **kwargs):
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._found:
            self.unscale_(optimizer)
        if self._found[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
        elif any(self._found.values()):
            self._scale *= self.backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self.growth_interval:
                self._scale *= self.growth_factor
                self._growth_tracker = 0
        self._found.clear()

    def state_dict(self) -> dict:
        return {"scale": self._scale, "growth_factor": self.growth_factor,
                "backoff_factor": self.backoff_factor, "growth_interval": self.growth_interval,
                "_growth_tracker": self._growth_tracker}  # fmt: skip

    def load_state_dict(self, sd: dict) -> None:
        self._scale = float(sd["scale"])
        self.growth_factor = float(sd["growth_factor"])
        self.backoff_factor = float(sd["backoff_factor"])
        self.growth_interval = int(sd["growth_interval"])
        self._growth_tracker = int(sd["_growth_tracker"])
