"""torch.nn's ParameterList, ParameterDict and Unflatten (nn layer).

Parameters sit under their index (``"0"``, ``"1"``, ...) or key, as in torch, so
state dict keys match."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..base.errors import ScellisError
from ..catalog.module import Module
from ..runtime.tensor import Tensor


def _as_parameter(value) -> Tensor:
    if not isinstance(value, Tensor):
        raise ScellisError(f"a parameter container holds tensors, got {type(value).__name__}")
    return value if value.requires_grad else value.detach().requires_grad_(True)


class ParameterList(Module):
    """torch.nn.ParameterList(values=None): parameters named by their position."""

    def __init__(self, values: Iterable | None = None):
        super().__init__()
        object.__setattr__(self, "_count", 0)
        for v in values or ():
            self.append(v)

    def append(self, value) -> ParameterList:
        self.register_parameter(str(self._count), _as_parameter(value))
        object.__setattr__(self, "_count", self._count + 1)
        return self

    def extend(self, values: Iterable) -> ParameterList:
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, i: int) -> Tensor:
        n = self._count
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for {n} parameters")
        return getattr(self, str(i % n))

    def __setitem__(self, i: int, value) -> None:
        self.register_parameter(str(i % self._count), _as_parameter(value))

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        return (self[i] for i in range(self._count))


class ParameterDict(Module):
    """torch.nn.ParameterDict(parameters=None): parameters named by their keys."""

    def __init__(self, parameters: Mapping | None = None):
        super().__init__()
        object.__setattr__(self, "_keys", [])
        self.update(parameters or {})

    def __setitem__(self, key: str, value) -> None:
        if key not in self._keys:
            self._keys.append(key)
        self.register_parameter(key, _as_parameter(value))

    def __getitem__(self, key: str) -> Tensor:
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(list(self._keys))

    def keys(self):
        return list(self._keys)

    def values(self):
        return [self[k] for k in self._keys]

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def update(self, parameters) -> None:
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for k, v in pairs:
            self[k] = v


class Unflatten(Module):
    """torch.nn.Unflatten(dim, unflattened_size): one axis split into several."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = int(dim), tuple(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        d = self.dim % x.ndim
        return x.reshape(*x.shape[:d], *self.unflattened_size, *x.shape[d + 1 :])
