"""WGSL kernel builders (devices layer), one module per op family, merged into KERNELS."""

from . import elementwise, random  # noqa: F401

KERNELS: dict = {}
for _mod in (elementwise, random):
    KERNELS.update(_mod.KERNELS)
