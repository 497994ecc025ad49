"""Optimizers (catalog layer): ``training/optimizer/*``, each one fused op per group a step.

Each is a Config (torch's hyper-parameters, names and defaults) and an ``Optimizer``
subclass that takes a Module, ``named_parameters()``, tensors or param-group dicts.
"""

from ..registry import register
from .adam import Adam, AdamConfig, AdamW, AdamWConfig
from .adaptive import Adagrad, AdagradConfig, NAdam, NAdamConfig, RAdam, RAdamConfig
from .base import Optimizer
from .flat import flat_view, flatten_parameters
from .lion import Lion, LionConfig
from .rmsprop import RMSprop, RMSpropConfig
from .sgd import SGD, SGDConfig

for _name, _cfg, _impl in (
    ("sgd", SGDConfig, SGD),
    ("adam", AdamConfig, Adam),
    ("adamw", AdamWConfig, AdamW),
    ("rmsprop", RMSpropConfig, RMSprop),
    ("lion", LionConfig, Lion),
    ("adagrad", AdagradConfig, Adagrad),
    ("nadam", NAdamConfig, NAdam),
    ("radam", RAdamConfig, RAdam),
):
    register(f"training/optimizer/{_name}", "optimizer", _cfg, _impl, builtin=True)

__all__ = [
    "Adagrad",
    "AdagradConfig",
    "NAdam",
    "NAdamConfig",
    "RAdam",
    "RAdamConfig",
    "Adam",
    "AdamConfig",
    "AdamW",
    "AdamWConfig",
    "Lion",
    "LionConfig",
    "Optimizer",
    "RMSprop",
    "RMSpropConfig",
    "SGD",
    "SGDConfig",
    "flat_view",
    "flatten_parameters",
]
