"""torch.nn's shape over the catalog (nn layer): ``scellis.nn.Linear(3, 2)`` and friends.

The layers an SML record can also name (Linear, Conv1d, LSTM, the transformer
blocks ...) are catalog blocks built from torch's constructor arguments: one
implementation serves records and Python code alike. The others (Conv2d and the image
layers, BatchNorm2d, the cells, RNN, the decoder, most losses) are modules composed
of differentiable ops. Either way parameters carry torch's names and layouts, so
``load_state_dict(torch_module.state_dict())`` works. A torch name not provided here
raises one error that says what to use instead. Browser-safe: pure Python, no NumPy.
"""

from ..catalog.module import Module, ModuleList  # noqa: F401
from . import functional, init, utils  # noqa: F401
from ._missing import LAYERS, refuse
from .activation import (  # noqa: F401
    CELU,
    ELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU6,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from .attention import (  # noqa: F401
    MultiheadAttention,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .cells import RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401
from .containers import ModuleDict, Sequential  # noqa: F401
from .conv import (  # noqa: F401
    AdaptiveAvgPool1d,
    AdaptiveMaxPool1d,
    AvgPool1d,
    BatchNorm1d,
    Conv1d,
    MaxPool1d,
)
from .decoder import Transformer, TransformerDecoder, TransformerDecoderLayer  # noqa: F401
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
from .loss import (  # noqa: F401
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from .norms import (  # noqa: F401
    BatchNorm2d,
    BatchNorm3d,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
)
from .padding import (  # noqa: F401
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from .pairwise import Bilinear, CosineSimilarity, PairwiseDistance  # noqa: F401
from .params import ParameterDict, ParameterList, Unflatten  # noqa: F401
from .recurrent import GRU, LSTM  # noqa: F401
from .vision import (  # noqa: F401
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool2d,
    Conv2d,
    ConvTranspose1d,
    ConvTranspose2d,
    Fold,
    MaxPool2d,
    PixelShuffle,
    PixelUnshuffle,
    Unfold,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)


def __getattr__(name: str):
    """A torch.nn name not provided here: one clear error naming what to use instead."""
    raise refuse("nn", name, LAYERS)
