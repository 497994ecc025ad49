"""WGSL kernel builders (devices layer), one module per op family, merged into KERNELS."""

from . import elementwise, index, layout, matmul, random, reduce  # noqa: F401

KERNELS: dict = {}
for _mod in (elementwise, random, reduce, layout, index, matmul):
    KERNELS.update(_mod.KERNELS)
