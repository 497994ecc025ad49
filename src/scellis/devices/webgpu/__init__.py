"""The WebGPU backend (devices layer): WGSL kernels over a GPU adapter protocol."""

from .backend import WebGPUBackend  # noqa: F401
