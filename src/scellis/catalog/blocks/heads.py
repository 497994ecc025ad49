"""Output heads (catalog layer): regression, classification and language-model heads.

Each head is a dense layer with torch.nn.Linear's names (``weight``, ``bias``) and init.
Regression and classification heads can first pool a sequence [B, T, F] to [B, F];
the language-model head keeps every position and may reuse (tie) an embedding's weight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ScellisError, ShapeError
from ...ops.composites import mean
from ..registry import field, register
from .common import Block, dense

POOLS = ("none", "last", "first", "mean")


def _pool(x, how: str):
    if how == "none":
        return x
    if x.ndim != 3:
        raise ShapeError(f"pool {how!r} takes a sequence [B, T, F], got {x.shape}")
    if how == "last":
        return x[:, -1]
    if how == "first":
        return x[:, 0]
    return mean(x, 1)


@dataclass(frozen=True)
class RegressionHeadConfig:
    """Real-valued outputs: a linear map to n_outputs (no activation)."""

    in_features: int = field(doc="size of the input's last axis", min=1)
    n_outputs: int = field(1, doc="targets predicted per example", min=1)
    bias: bool = field(True, doc="learned bias")
    pool: str = field("none", doc="reduce a sequence [B, T, F] first", choices=POOLS)


@dataclass(frozen=True)
class ClassificationHeadConfig:
    """Class logits: a linear map to n_classes (softmax belongs to the loss)."""

    in_features: int = field(doc="size of the input's last axis", min=1)
    n_classes: int = field(doc="number of classes", min=2)
    bias: bool = field(True, doc="learned bias")
    pool: str = field("none", doc="reduce a sequence [B, T, F] first", choices=POOLS)


class RegressionHead(Block):
    """``weight`` [n_outputs, in], ``bias`` [n_outputs]."""

    @property
    def incremental(self) -> bool:  # a pooled sequence mixes positions
        return self.config.pool == "none"

    def __init__(self, cfg: RegressionHeadConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        self.dense_params(cfg.in_features, cfg.n_outputs, cfg.bias)

    def forward(self, x):
        return dense(_pool(x, self.config.pool), self.weight, self.bias)


class ClassificationHead(Block):
    """``weight`` [n_classes, in], ``bias`` [n_classes]; returns logits."""

    incremental = RegressionHead.incremental

    def __init__(self, cfg: ClassificationHeadConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        self.dense_params(cfg.in_features, cfg.n_classes, cfg.bias)

    def forward(self, x):
        return dense(_pool(x, self.config.pool), self.weight, self.bias)


@dataclass(frozen=True)
class LMHeadConfig:
    """Next-token logits: a linear map from d_model to the vocabulary at every position."""

    d_model: int = field(doc="size of the input's last axis", min=1)
    vocab_size: int = field(doc="number of tokens", min=1)
    bias: bool = field(False, doc="learned bias over the vocabulary")
    tie_to: str = field(
        "", doc="name of an embedding block whose weight [vocab, d_model] this head reuses"
    )


class LMHead(Block):
    """Own ``weight`` [vocab, d_model], or none when tied: then the embedding's is used.

    A tied head holds no parameter of its own (the embedding's weight is listed once,
    under the embedding) and reads it at every call, so updates to it are seen here.
    """

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: LMHeadConfig, *, device=None, dtype=None, gen=None, embedding=None):
        super().__init__(cfg, device, dtype, gen)
        object.__setattr__(self, "tied", None)
        if cfg.tie_to or embedding is not None:
            self.weight = None
            if embedding is not None:
                self.tie(embedding)
        else:
            self.weight = self.uniform((cfg.vocab_size, cfg.d_model), 1 / math.sqrt(cfg.d_model))
        b = 1.0 / math.sqrt(cfg.d_model)
        self.bias = self.uniform((cfg.vocab_size,), b) if cfg.bias else None

    def tie(self, embedding) -> None:
        """Reuse ``embedding.weight`` (an Embedding block, or any module with that weight)."""
        c = self.config
        shape = tuple(embedding.weight.shape)
        if shape != (c.vocab_size, c.d_model):
            raise ScellisError(
                f"cannot tie a [{c.vocab_size}, {c.d_model}] head to an "
                f"embedding of shape {list(shape)}"
            )
        # kept outside the child tree, so the shared weight is not listed twice
        object.__setattr__(self, "tied", embedding)

    def forward(self, x):
        if self.tied is not None:
            w = self.tied.weight
        elif self.weight is not None:
            w = self.weight
        else:
            raise ScellisError(
                f"the head is tied to {self.config.tie_to!r}, which was never "
                "attached (call head.tie(embedding))"
            )
        return dense(x, w, self.bias)


register("nn/regression_head", "block", RegressionHeadConfig, RegressionHead, builtin=True)
register(
    "nn/classification_head", "block", ClassificationHeadConfig, ClassificationHead, builtin=True
)
register("nn/lm_head", "block", LMHeadConfig, LMHead, builtin=True)
