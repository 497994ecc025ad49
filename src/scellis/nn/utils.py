"""torch.nn.utils' gradient clipping (nn layer): the catalog's, under torch's names."""

from ..catalog.clip import clip_grad_norm_, clip_grad_value_  # noqa: F401
