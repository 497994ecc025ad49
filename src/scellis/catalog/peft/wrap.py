"""A wrapper that takes over a block's tensors under their own names (catalog layer).

An adapter that changes what a block sees or returns (a prompt prepended to an
embedding's output, positions dropped before a head) wraps the block without
renaming anything: the wrapper lists the block's parameters, buffers and children as
its own, so ``tok.weight`` stays ``tok.weight``. The block itself is kept outside the
tree, and before each call it is handed the wrapper's current parameters (an
optimizer may have put new tensors in their place).
"""

from __future__ import annotations

from ..blocks.common import Block
from ..module import Module
from .select import put_param


class Delegate(Block):
    def __init__(self, cfg, base: Module, *, gen=None):
        c = getattr(base, "ctx", {})
        super().__init__(cfg, c.get("device"), c.get("dtype"), gen)
        object.__setattr__(self, "base", base)
        for name, t in base._params.items():
            put_param(self, name, t)
        for name, t in base._buffers.items():
            self.register_buffer(name, t)
        for name, m in base._children.items():
            self._children[name] = m
            object.__setattr__(self, name, m)

    def call_base(self, *args, **kwargs):
        for name in self.base._params:
            object.__setattr__(self.base, name, self._params[name])
        return self.base(*args, **kwargs)

    def unwrap(self) -> Module:
        """The block with the wrapper's current parameters, as it was before wrapping."""
        for name in self.base._params:
            put_param(self.base, name, self._params[name])
        return self.base
