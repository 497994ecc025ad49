"""Dense, embedding, normalisation, dropout and activation layers (nn layer).

Each class is the catalog block itself (a subclass adding torch's constructor): the
constructor makes the block's Config from torch's arguments and builds the block, so
an ``nn.Linear`` and an SML ``nn/linear`` are one implementation with one set of
parameter names (torch's: ``weight``, ``bias``).
"""

from __future__ import annotations

from ..base.errors import ScellisError, ShapeError
from ..catalog import blocks as B
from ..catalog.blocks.activation import Activation, ActivationConfig
from ..catalog.module import Module
from ..runtime.tensor import Tensor
from . import _reset
from . import functional as F
from ._home import block_args, unsupported
from ._inplace import write_back


class Linear(B.Linear):
    """torch.nn.Linear(in_features, out_features, bias=True)."""

    reset_parameters = _reset.dense

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *,
                 generator=None):  # fmt: skip
        cfg = B.LinearConfig(int(in_features), int(out_features), bool(bias))
        super().__init__(cfg, **block_args(device, dtype, generator))


class Embedding(B.Embedding):
    """torch.nn.Embedding(num_embeddings, embedding_dim, padding_idx=None)."""

    reset_parameters = _reset.embedding

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, device=None,
                 dtype=None, *, generator=None):  # fmt: skip
        if scale_grad_by_freq or sparse:
            raise unsupported("scale_grad_by_freq and sparse gradients", "Embedding")
        cfg = B.EmbeddingConfig(int(num_embeddings), int(embedding_dim), padding_idx)
        super().__init__(cfg, **block_args(device, dtype, generator))
        object.__setattr__(self, "max_norm", None if max_norm is None else float(max_norm))
        object.__setattr__(self, "norm_type", float(norm_type))

    def forward(self, idx):
        if self.max_norm is not None:  # torch shrinks the looked-up rows first, in place
            F.renorm_rows_(self.weight, idx, self.max_norm, self.norm_type)
        return super().forward(idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False,
                        sparse=False) -> Embedding:  # fmt: skip
        """torch's: the rows of ``embeddings`` [N, D] as they are (the padding row too,
        which still takes no gradient); ``freeze`` stops training them."""
        if embeddings.ndim != 2:
            raise ScellisError(f"from_pretrained takes a 2-d [N, D] tensor, got {embeddings.shape}")
        n, d = embeddings.shape
        m = cls(n, d, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                device=embeddings.device.name, dtype=embeddings.dtype.name)  # fmt: skip
        m.weight = embeddings.detach().clone().requires_grad_(not freeze)
        if freeze:  # a frozen tensor is no longer registered by assignment; keep it a parameter
            m._params["weight"] = m.weight
        return m


class LayerNorm(B.LayerNorm):
    """torch.nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True):
    over the trailing axes ``normalized_shape`` names (an int or a tuple). Over several
    axes, ``weight`` and ``bias`` keep torch's shape and the block sees the axes as one."""

    reset_parameters = _reset.affine

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):  # fmt: skip
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        n = 1
        for d in shape:
            n *= int(d)
        cfg = B.LayerNormConfig(n, float(eps), elementwise_affine, bias)
        super().__init__(cfg, **block_args(device, dtype))
        object.__setattr__(self, "normalized_shape", tuple(int(d) for d in shape))
        if len(shape) > 1:
            for name in ("weight", "bias"):
                if getattr(self, name) is not None:
                    setattr(self, name, self.constant(self.normalized_shape, 1.0 if name ==
                                                      "weight" else 0.0))  # fmt: skip

    def forward(self, x):
        shape = self.normalized_shape
        if len(shape) == 1:
            return super().forward(x)
        if tuple(x.shape[x.ndim - len(shape) :]) != shape:
            raise ShapeError(f"LayerNorm{shape}: the input's trailing axes are {x.shape}")
        return F.layer_norm(x, shape, self.weight, self.bias, self.config.eps)


class RMSNorm(B.RMSNorm):
    """torch.nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):  # fmt: skip
        if not isinstance(normalized_shape, int):
            (normalized_shape,) = tuple(normalized_shape)
        cfg = B.RMSNormConfig(int(normalized_shape), eps, elementwise_affine)
        super().__init__(cfg, **block_args(device, dtype))


class Dropout(B.Dropout):
    """torch.nn.Dropout(p=0.5): a Philox mask from the ``dropout`` stream in training."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__(B.DropoutConfig(float(p)))
        object.__setattr__(self, "inplace", bool(inplace))

    def forward(self, x: Tensor) -> Tensor:
        return write_back(x, super().forward(x), self.inplace, "dropout")


class _Activation(Activation):
    function = ""

    def __init__(self, inplace: bool = False):  # torch's one argument (ReLU, SiLU)
        super().__init__(ActivationConfig(self.function))
        object.__setattr__(self, "inplace", bool(inplace))

    def forward(self, x: Tensor) -> Tensor:
        return write_back(x, super().forward(x), self.inplace, self.function)


class ReLU(_Activation):
    function = "relu"


class Tanh(_Activation):
    function = "tanh"


class Sigmoid(_Activation):
    function = "sigmoid"


class SiLU(_Activation):
    function = "silu"


class GELU(Activation):
    """torch.nn.GELU(approximate='none' | 'tanh')."""

    def __init__(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise unsupported(f"approximate={approximate!r}", "GELU")
        super().__init__(ActivationConfig("gelu" if approximate == "none" else "gelu_tanh"))
        object.__setattr__(self, "approximate", approximate)


class Identity(Module):
    """torch.nn.Identity: returns its input."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return x


class Flatten(Module):
    """torch.nn.Flatten(start_dim=1, end_dim=-1)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)


class _ParameterType(type):
    def __instancecheck__(cls, obj) -> bool:
        # a module registers the leaf tensors that need a gradient as its parameters,
        # so that is what ``isinstance(t, nn.Parameter)`` asks of a tensor here
        return isinstance(obj, Tensor) and obj.requires_grad and obj.is_leaf


class Parameter(metaclass=_ParameterType):
    """torch.nn.Parameter: a leaf tensor that a Module registers as a parameter (a plain
    Tensor: there is no subclass, but ``isinstance(t, nn.Parameter)`` still answers)."""

    def __new__(cls, data: Tensor, requires_grad: bool = True) -> Tensor:
        return data.detach().requires_grad_(requires_grad)


class LeakyReLU(Module):
    """torch.nn.LeakyReLU(negative_slope=0.01): x where x > 0, else slope * x (no SML
    form: the catalog has no leaky activation)."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = float(negative_slope)
        object.__setattr__(self, "inplace", bool(inplace))

    def forward(self, x: Tensor) -> Tensor:
        out = x.where(x > 0, x * self.negative_slope)
        return write_back(x, out, self.inplace, "leaky_relu")
