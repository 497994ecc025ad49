"""The built-in blocks (catalog layer): importing this package registers every ``nn/*`` id.

Each family lives in its own module: dense (linear), recurrent, convolution over time
(conv), images (image), pooling (pool), attention, transformer, position, norm, compose
and heads. All forwards are written with tensor methods and composites only, so they run on every
device and in the browser.
"""

from . import (  # noqa: F401
    activation,
    attention,
    compose,
    conv,
    heads,
    image,
    linear,
    norm,
    onnx_op,
    pool,
    position,
    recurrent,
    sdpa,
    transformer,
)
from .attention import AttentionConfig, MultiHeadAttention  # noqa: F401
from .common import Block  # noqa: F401
from .compose import Residual, ResidualConfig, Sequential, SequentialConfig, build  # noqa: F401
from .conv import TCN, Conv1d, Conv1dConfig, TCNConfig  # noqa: F401
from .heads import (  # noqa: F401
    ClassificationHead,
    ClassificationHeadConfig,
    LMHead,
    LMHeadConfig,
    RegressionHead,
    RegressionHeadConfig,
)
from .image import (  # noqa: F401
    AvgPool2d,
    BatchNorm2d,
    BatchNorm2dConfig,
    Conv2d,
    Conv2dConfig,
    MaxPool2d,
    Pool2dConfig,
)
from .linear import (  # noqa: F401
    MLP,
    Embedding,
    EmbeddingConfig,
    GatedMLP,
    GatedMLPConfig,
    Linear,
    LinearConfig,
    MLPConfig,
)
from .norm import (  # noqa: F401
    BatchNorm1d,
    BatchNorm1dConfig,
    Dropout,
    DropoutConfig,
    LayerNorm,
    LayerNormConfig,
    RMSNorm,
    RMSNormConfig,
)
from .pool import (  # noqa: F401
    AvgPool1d,
    AvgPool1dConfig,
    GlobalPool1d,
    GlobalPool1dConfig,
    MaxPool1d,
    MaxPool1dConfig,
)
from .position import (  # noqa: F401
    LearnedPosition,
    LearnedPositionConfig,
    SinusoidalPosition,
    SinusoidalPositionConfig,
    TokenType,
    TokenTypeConfig,
    rotary,
)
from .recurrent import GRU, LSTM, GRUConfig, LSTMConfig  # noqa: F401
from .transformer import (  # noqa: F401
    Transformer,
    TransformerBlock,
    TransformerBlockConfig,
    TransformerConfig,
)
