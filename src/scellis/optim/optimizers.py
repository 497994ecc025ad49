"""torch.optim's constructors over the catalog optimizers (optim layer).

``SGD(model.parameters(), lr=0.1, momentum=0.9)`` is the catalog's ``SGD`` with its
Config made from torch's keywords: the same fused update, the same flat buffers.
Parameters are a Module's ``parameters()`` (or ``named_parameters()``), any
iterable of tensors, or a list of param-group dicts ``{"params": [...], **options}``.
The optimizer holds those tensor objects: loading weights into the module or moving
it later keeps them trained. torch's implementation switches (``foreach``,
``fused``, ``capturable``, ``differentiable``) are accepted and change nothing: there
is one fused implementation.
"""

from __future__ import annotations

from ..catalog import optim as O

_SWITCHES = ("foreach", "fused", "capturable", "differentiable")


def _options(local: dict) -> dict:
    """torch's keywords minus the implementation switches and the params."""
    return {k: v for k, v in local.items() if k not in (*_SWITCHES, "self", "params", "__class__")}


def _params(params):
    """A generator (torch users pass ``model.parameters()`` of any kind) read once."""
    return params if hasattr(params, "set_parameter") else list(params)


class _TorchState:
    """torch's ``optimizer.state[param]``: a parameter's step count and moments, as views
    of the group's flat state buffers (read them; ``load_state_dict`` writes them)."""

    @property
    def state(self) -> dict:
        return {p: self.state_of(p) for g in self.param_groups for p in g["params"]}


class SGD(_TorchState, O.SGD):
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):  # fmt: skip
        super().__init__(_params(params), **_options(locals()))


class Adam(_TorchState, O.Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):  # fmt: skip
        super().__init__(_params(params), **_options(locals()))


class AdamW(_TorchState, O.AdamW):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):  # fmt: skip
        super().__init__(_params(params), **_options(locals()))


class RMSprop(_TorchState, O.RMSprop):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):  # fmt: skip
        super().__init__(_params(params), **_options(locals()))


class Adagrad(_TorchState, O.Adagrad):
    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):  # fmt: skip
        super().__init__(_params(params), **_options(locals()))


class NAdam(_TorchState, O.NAdam):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):  # fmt: skip
        super().__init__(_params(params), **_options(locals()))


class RAdam(_TorchState, O.RAdam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):  # fmt: skip
        super().__init__(_params(params), **_options(locals()))


Optimizer = O.Optimizer
