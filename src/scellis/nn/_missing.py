"""torch.nn names Scellis does not provide, each with what to use instead (nn layer).

``scellis.nn.X`` and ``scellis.nn.functional.x`` for such a name raise one
ScellisError that says so; it is also an AttributeError, so ``hasattr`` and
``getattr(nn, name, default)`` keep working as with any missing attribute.
"""

from __future__ import annotations

from ..base.errors import ScellisError


class NotProvided(ScellisError, AttributeError):
    """A torch name that Scellis knows and does not provide."""


_VOLUME = "fold the depth into the batch and use the 2-d layer"
_LAZY = "give the input size, e.g. Linear(in, out)"

LAYERS = {
    **dict.fromkeys(["Conv3d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
                     "AdaptiveMaxPool3d", "InstanceNorm3d", "Upsample3d"], _VOLUME),
    "MaxUnpool3d": _VOLUME,
    **dict.fromkeys(["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConvTranspose2d",
                     "LazyBatchNorm1d", "LazyBatchNorm2d"], _LAZY),
    "CTCLoss": "train with per-step CrossEntropyLoss on aligned targets",
    "MultiLabelMarginLoss": "use BCEWithLogitsLoss on multi-hot targets",
    "AdaptiveLogSoftmaxWithLoss": "use Linear + CrossEntropyLoss over the whole vocabulary",
    "EmbeddingBag": "use Embedding, then .sum(dim) or .mean(dim) over the bag axis",
    "SyncBatchNorm": "training runs on one device; use BatchNorm1d/BatchNorm2d",
    "DataParallel": "training runs on one device; call the model itself",
    "RReLU": "use LeakyReLU (RReLU in eval is LeakyReLU((lower + upper) / 2))",
    "AlphaDropout": "use Dropout", "FeatureAlphaDropout": "use Dropout2d",
    "LocalResponseNorm": "use BatchNorm2d or GroupNorm",
    "CrossMapLRN2d": "use BatchNorm2d or GroupNorm",
    "LPPool1d": "use AvgPool1d on x.pow(p), then .pow(1 / p)",
    "LPPool2d": "use AvgPool2d on x.pow(p), then .pow(1 / p)",
    "FractionalMaxPool2d": "use MaxPool2d or AdaptiveMaxPool2d",
    "ChannelShuffle": "reshape to [B, g, C/g, H, W], transpose(1, 2), reshape back",
    "modules": "the classes on scellis.nn itself (isinstance(m, (nn.BatchNorm1d, "
    "nn.BatchNorm2d))); torch's private bases (_BatchNorm, _ConvNd) have no counterpart",
}  # fmt: skip

FUNCTIONS = {
    **dict.fromkeys(["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d",
                     "adaptive_avg_pool3d", "adaptive_max_pool3d"], _VOLUME),
    "max_unpool3d": _VOLUME,
    "ctc_loss": LAYERS["CTCLoss"],
    "multilabel_margin_loss": LAYERS["MultiLabelMarginLoss"],
    "embedding_bag": LAYERS["EmbeddingBag"],
    "rrelu": LAYERS["RReLU"], "alpha_dropout": "use dropout",
    "feature_alpha_dropout": "use dropout2d",
    "local_response_norm": LAYERS["LocalResponseNorm"],
    "lp_pool1d": LAYERS["LPPool1d"], "lp_pool2d": LAYERS["LPPool2d"],
    "fractional_max_pool2d": LAYERS["FractionalMaxPool2d"],
}  # fmt: skip


def refuse(module: str, name: str, table: dict):
    """The error for ``module.name``: NotProvided for a known torch name, else the
    plain AttributeError Python gives."""
    if name in table:
        return NotProvided(f"torch's {module}.{name} is not provided: {table[name]}")
    return AttributeError(f"module 'scellis.{module}' has no attribute {name!r}")
