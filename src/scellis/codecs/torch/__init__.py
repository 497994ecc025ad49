"""PyTorch files (codecs layer): state dicts read without torch, and modules written for it.

``pt`` reads and writes ``.pt`` archives: a checked zip (``safezip``) holding a pickle
that only ``unpickle``'s restricted unpickler opens. ``module`` writes a plain
``nn.Module`` (its source from ``source``) with its weights. Nothing here imports torch.
"""

from . import module, pt  # noqa: F401  (registers codec/torch and codec/torch_module)
