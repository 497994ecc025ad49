"""WGSL kernel builders (devices layer), one module per op family, merged into KERNELS."""

from . import attention, elementwise, index, layout, matmul, optim, random, recurrent, reduce  # noqa: F401

KERNELS: dict = {}
for _mod in (attention, elementwise, random, reduce, layout, index, matmul, optim, recurrent):
    KERNELS.update(_mod.KERNELS)
