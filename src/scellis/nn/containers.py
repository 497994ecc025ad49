"""Containers (nn layer): Sequential, ModuleList and ModuleDict, torch-shaped.

``Sequential(*modules)`` is the catalog's ``nn/sequential`` block over built modules
(children ``0``, ``1``, ... as in torch); given one ordered mapping, its keys name
the children instead, again as in torch.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..catalog import blocks as B
from ..catalog.module import Module, ModuleList


class Sequential(B.Sequential):
    """torch.nn.Sequential(*modules) or Sequential(OrderedDict(name=module, ...))."""

    def __init__(self, *modules):
        named = None
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            named = dict(modules[0])
            modules = tuple(named.values())
        super().__init__(B.SequentialConfig(tuple(modules)))
        if named is not None:
            self._children.clear()
            self._children.update(named)

    def append(self, module: Module) -> Sequential:
        self._children[str(len(self.layers))] = module
        self.layers.append(module)
        return self


class ModuleDict(Module):
    """torch.nn.ModuleDict: children by name, in insertion order."""

    def __init__(self, modules: Mapping | None = None):
        super().__init__()
        for name, m in dict(modules or {}).items():
            self[name] = m

    def __setitem__(self, name: str, module: Module) -> None:
        setattr(self, name, module)

    def __getitem__(self, name: str) -> Module:
        return self._children[name]

    def __contains__(self, name: str) -> bool:
        return name in self._children

    def __iter__(self):
        return iter(self._children)

    def __len__(self) -> int:
        return len(self._children)

    def keys(self):
        return self._children.keys()

    def values(self):
        return self._children.values()

    def items(self):
        return self._children.items()


__all__ = ["ModuleDict", "ModuleList", "Sequential"]
