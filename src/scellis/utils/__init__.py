"""torch.utils' shape: ``scellis.utils.data`` (the data loaders) and
``scellis.utils.checkpoint``; each loads when first named."""

from importlib import import_module


def __getattr__(name: str):
    if name in ("data", "checkpoint"):
        module = import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'scellis.utils' has no attribute {name!r}")
