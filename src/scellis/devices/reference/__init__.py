"""The reference backend (devices layer): NumPy, float64 and float32; the oracle."""

from .backend import ReferenceBackend  # noqa: F401
