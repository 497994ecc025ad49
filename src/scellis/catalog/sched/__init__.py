"""Learning-rate schedulers (catalog layer): ``training/scheduler/*``, torch-exact rates.

Each is a Config and a ``Scheduler`` subclass; every rate is a pure function of the
step (reduce_on_plateau: of the metric history), so a checkpoint stores the step.
"""

from ..registry import register
from .base import Scheduler
from .compose import Chained, ChainedConfig, Sequential, SequentialConfig
from .more import (
    CosineRestarts,
    CosineRestartsConfig,
    MultiStep,
    MultiStepConfig,
    Polynomial,
    PolynomialConfig,
)
from .one_cycle import OneCycle, OneCycleConfig
from .plateau import ReduceOnPlateau, ReduceOnPlateauConfig, plateau_lrs
from .schedules import (
    Constant,
    ConstantConfig,
    Cosine,
    CosineConfig,
    Exponential,
    ExponentialConfig,
    LinearWarmup,
    LinearWarmupConfig,
    Step,
    StepConfig,
    WarmupCosine,
    WarmupCosineConfig,
)

SCHEDULERS = {
    "constant": (ConstantConfig, Constant),
    "step": (StepConfig, Step),
    "exponential": (ExponentialConfig, Exponential),
    "cosine": (CosineConfig, Cosine),
    "warmup_cosine": (WarmupCosineConfig, WarmupCosine),
    "linear_warmup": (LinearWarmupConfig, LinearWarmup),
    "one_cycle": (OneCycleConfig, OneCycle),
    "reduce_on_plateau": (ReduceOnPlateauConfig, ReduceOnPlateau),
    "multi_step": (MultiStepConfig, MultiStep),
    "polynomial": (PolynomialConfig, Polynomial),
    "cosine_restarts": (CosineRestartsConfig, CosineRestarts),
    "sequential": (SequentialConfig, Sequential),
    "chained": (ChainedConfig, Chained),
}
for _name, (_cfg, _impl) in SCHEDULERS.items():
    register(f"training/scheduler/{_name}", "scheduler", _cfg, _impl, builtin=True)

__all__ = ["SCHEDULERS", "Scheduler", "plateau_lrs"] + [
    c.__name__ for p in SCHEDULERS.values() for c in p
]
