"""torch.nn's shape over the catalog (nn layer): ``scellis.nn.Linear(3, 2)`` and friends.

Every layer is a catalog block built from torch's constructor arguments: one
implementation serves SML records and Python code alike, with torch's parameter
names, so ``load_state_dict(torch_module.state_dict())`` works for the layers here.
Browser-safe: pure Python, no NumPy.
"""

from ..catalog.module import Module, ModuleList  # noqa: F401
from . import functional, init, utils  # noqa: F401
from .attention import (  # noqa: F401
    MultiheadAttention,
    Transformer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .containers import ModuleDict, Sequential  # noqa: F401
from .conv import (  # noqa: F401
    AdaptiveAvgPool1d,
    AdaptiveMaxPool1d,
    AvgPool1d,
    BatchNorm1d,
    Conv1d,
    MaxPool1d,
)
from .layers import (  # noqa: F401
    GELU,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    Parameter,
    ReLU,
    RMSNorm,
    Sigmoid,
    SiLU,
    Tanh,
)
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss  # noqa: F401
from .recurrent import GRU, LSTM  # noqa: F401
