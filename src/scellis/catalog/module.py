"""Modules (catalog layer): a block's implementation as a tree of named parameters.

Parameters are tensors with ``requires_grad``; children are other modules. Dotted
paths from the root (``blocks.0.attn.q.weight``) are the checkpoint keys and the
import name maps, so they must be stable: they follow attribute names and list
indices, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..runtime.tensor import Tensor


class Module:
    """Base of every block: holds parameters, buffers (non-trained state) and children.

    ``incremental``: whether cached decoding (``catalog.blocks.decoding``) may call the
    module on new positions only; false unless a class says so, because a module that
    mixes positions would silently compute something else on part of a sequence.
    """

    incremental = False

    def __init__(self):
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value) -> None:
        params, children = self.__dict__.get("_params"), self.__dict__.get("_children")
        if params is None:
            raise RuntimeError("call Module.__init__() before assigning attributes")
        params.pop(name, None)
        children.pop(name, None)
        self._buffers.pop(name, None)
        if isinstance(value, Tensor) and value.requires_grad:
            params[name] = value
        elif isinstance(value, Module):
            children[name] = value
        elif (
            isinstance(value, (list, tuple)) and value and all(isinstance(v, Module) for v in value)
        ):
            children[name] = ModuleList(value)
            value = children[name]
        object.__setattr__(self, name, value)

    def register_buffer(self, name: str, t: Tensor) -> None:
        self._buffers[name] = t
        object.__setattr__(self, name, t)

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        for n, p in self._params.items():
            yield prefix + n, p
        for n, c in self._children.items():
            yield from c.named_parameters(f"{prefix}{n}.")

    def parameters(self) -> list[Tensor]:
        return [p for _, p in self.named_parameters()]

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        yield prefix.rstrip("."), self
        for n, c in self._children.items():
            yield from c.named_modules(f"{prefix}{n}.")

    def state_dict(self) -> dict[str, Tensor]:
        out = dict(self.named_parameters())
        for mname, m in self.named_modules():
            for b, t in m._buffers.items():
                out[f"{mname}.{b}" if mname else b] = t
        return out

    def set_parameter(self, path: str, value: Tensor) -> None:
        """Replace the parameter at dotted ``path`` (e.g. after an optimizer step)."""
        mod: Module = self
        *parts, last = path.split(".")
        for p in parts:
            mod = mod._children[p]
        if last not in mod._params:
            raise KeyError(path)
        value.requires_grad = True
        mod._params[last] = value
        object.__setattr__(mod, last, value)

    def train(self, mode: bool = True) -> Module:
        for _, m in self.named_modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError


class ModuleList(Module):
    """An indexed list of modules: children named ``0``, ``1``, ..."""

    incremental = True  # a container: its children are checked on their own

    def __init__(self, mods):
        super().__init__()
        for i, m in enumerate(mods):
            self._children[str(i)] = m
        object.__setattr__(self, "_list", list(mods))

    def __iter__(self):
        return iter(self._list)

    def __len__(self) -> int:
        return len(self._list)

    def __getitem__(self, i: int) -> Module:
        return self._list[i]
