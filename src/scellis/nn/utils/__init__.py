"""torch.nn.utils (nn layer): gradient clipping (the catalog's), flat parameter
vectors, ``rnn`` (packed sequences) and ``parametrizations``."""

from ...catalog.clip import clip_grad_norm_, clip_grad_value_  # noqa: F401
from . import parametrizations, rnn  # noqa: F401
from .vectors import parameters_to_vector, vector_to_parameters  # noqa: F401

# torch's older spellings
weight_norm = parametrizations.legacy_weight_norm
spectral_norm = parametrizations.spectral_norm
