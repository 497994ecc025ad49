"""torch.nn.utils.parametrizations (nn layer): not provided; each entry point says so
and names what to do instead, rather than failing on a missing attribute."""

from __future__ import annotations

from ...base.errors import ScellisError


def _refuse(name: str, instead: str):
    def refuse(*args, **kwargs):
        raise ScellisError(f"nn.utils.parametrizations.{name} is not supported; {instead}")

    refuse.__name__ = name
    return refuse


weight_norm = _refuse(
    "weight_norm",
    "keep direction v and scale g as parameters and compute "
    "weight = g * v / v.norm(dim=1, keepdim=True) in forward",  # fmt: skip
)
spectral_norm = _refuse("spectral_norm", "normalise the weight by its largest singular value "
                        "(a power iteration) in forward")  # fmt: skip
orthogonal = _refuse("orthogonal", "re-orthogonalise the weight after each optimizer step")
