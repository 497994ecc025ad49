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
            self._sync()

    # The children mapping is the one truth, as in torch: ``seq[i] = m``, ``del seq[i]``,
    # ``add_module`` and ``append`` all change what forward runs.
    def _sync(self) -> None:
        object.__setattr__(self, "layers", list(self._children.values()))
        for name, m in self._children.items():  # ``seq.fc`` for a child named fc
            object.__setattr__(self, name, m)

    def _key(self, i: int) -> str:
        keys = list(self._children)
        if not -len(keys) <= i < len(keys):
            raise IndexError(f"index {i} is out of range for a Sequential of {len(keys)}")
        return keys[i]

    def __getitem__(self, i):
        if isinstance(i, slice):  # torch slices into a Sequential, keeping the names
            return Sequential(dict(list(self._children.items())[i]))
        return self._children[self._key(int(i))]

    def __setitem__(self, i, module: Module) -> None:
        self._children[self._key(int(i))] = module
        self._sync()

    def __delitem__(self, i) -> None:
        keys = list(self._children)[i] if isinstance(i, slice) else [self._key(int(i))]
        for k in keys:
            del self._children[k]
            self.__dict__.pop(k, None)
        self._sync()

    def __len__(self) -> int:
        return len(self._children)

    def __iter__(self):
        return iter(list(self._children.values()))

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(name, value)
        if isinstance(value, Module) and name in self._children:
            self._sync()

    def forward(self, x):
        for m in list(self._children.values()):
            x = m(x)
        return x

    def append(self, module: Module) -> Sequential:
        self._children[str(len(self._children))] = module
        self._sync()
        return self

    def extend(self, modules) -> Sequential:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        mods = list(self._children.values())
        mods.insert(index, module)
        self._children.clear()
        self._children.update((str(i), m) for i, m in enumerate(mods))
        self._sync()
        return self


class ModuleDict(Module):
    """torch.nn.ModuleDict: children by name, in insertion order."""

    def __init__(self, modules: Mapping | None = None):
        super().__init__()
        self.update(modules or {})

    def update(self, modules) -> None:
        """Children from a mapping or (name, module) pairs, as torch's."""
        for name, m in dict(modules).items():
            self[name] = m

    def pop(self, name: str) -> Module:
        module = self[name]
        delattr(self, name)
        return module

    def clear(self) -> None:
        for name in list(self._children):
            delattr(self, name)

    def __delitem__(self, name: str) -> None:
        delattr(self, name)

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
