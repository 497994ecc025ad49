"""torch.nn.utils' parameters_to_vector and vector_to_parameters (nn layer)."""

from __future__ import annotations

from ...autograd import no_grad
from ...base.errors import ScellisError
from ...runtime.inplace import write_into


def parameters_to_vector(parameters):
    """All parameters flattened and joined into one vector (differentiable, as torch's)."""
    flat = [p.reshape((p.numel,)) for p in parameters]
    if not flat:
        raise ScellisError("parameters_to_vector: no parameters given")
    return flat[0].cat(flat[1:], 0) if len(flat) > 1 else flat[0]


def vector_to_parameters(vec, parameters) -> None:
    """Slices of ``vec`` written into each parameter in order (in place, as torch's)."""
    params = list(parameters)
    total = sum(p.numel for p in params)
    if vec.ndim != 1 or vec.shape[0] != total:
        raise ScellisError(f"vector_to_parameters: expected a vector of {total}, got {vec.shape}")
    at = 0
    with no_grad():
        for p in params:
            write_into(p, vec.detach()[at : at + p.numel].reshape(p.shape))
            at += p.numel
