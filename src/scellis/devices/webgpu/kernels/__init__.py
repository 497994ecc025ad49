"""WGSL kernel builders (devices layer), one module per op family, merged into KERNELS."""

from . import (  # noqa: F401
    attention,
    dense,
    elementwise,
    fused_step,
    index,
    layout,
    matmul,
    norm,
    optim,
    qmatmul,
    quantize,
    random,
    recurrent,
    reduce,
    unfold,
    xent,
)

KERNELS: dict = {}
for _mod in (
    attention,
    dense,
    elementwise,
    fused_step,
    random,
    reduce,
    layout,
    index,
    matmul,
    qmatmul,
    quantize,
    optim,
    recurrent,
    norm,
    unfold,
    xent,
):
    KERNELS.update(_mod.KERNELS)
