"""Modules (catalog layer): a block's implementation as a tree of named parameters.

Parameters are tensors with ``requires_grad``; children are other modules. Dotted
paths from the root (``blocks.0.attn.q.weight``) are the checkpoint keys and the
import name maps, so they must be stable: they follow attribute names and list
indices, nothing else.

Loading (``load_state_dict``), moving (``to``) and ``set_parameter`` change a
parameter's values or storage but never swap the object: an optimizer built before
holds the very same objects and keeps training them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..base.dtypes import as_dtype
from ..base.errors import DTypeError, ScellisError
from ..devices.base import get_device
from ..runtime.inplace import rebind, transfer
from ..runtime.tensor import Tensor
from .module_grad_hooks import add_grad_hook, call_with_grad_hooks, grad_hooks_apply
from .module_hooks import add_hook, call_with_hooks
from .module_precision import autocast_applies, call_autocast
from .module_state import IncompatibleKeys, exported, load_state


def _stays_buffer(value) -> bool:
    """A tensor that is not a parameter: assigned to a buffer's name, it replaces it."""
    return isinstance(value, Tensor) and not value.requires_grad


class ParameterSeq(list):
    """A list that ``next()`` also walks, for torch's ``next(model.parameters())``."""

    def __next__(self):
        at = self.__dict__.get("_next", 0)
        if at >= len(self):
            raise StopIteration
        self._next = at + 1
        return self[at]


class Module:
    """Base of every block: holds parameters, buffers (non-trained state) and children.

    ``incremental``: whether cached decoding (``catalog.blocks.decoding``) may call the
    module on new positions only; false unless a class says so, because a module that
    mixes positions would silently compute something else on part of a sequence.
    """

    incremental = False
    # True where ``export_state`` renames (a torch-shaped layer): the others are skipped
    exports_torch_names = False

    def __init__(self):
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_transient", set())  # buffers outside the state dict
        object.__setattr__(self, "_hooks", {"pre": {}, "post": {}})

    def __setattr__(self, name: str, value) -> None:
        params, children = self.__dict__.get("_params"), self.__dict__.get("_children")
        if params is None:
            raise RuntimeError("call Module.__init__() before assigning attributes")
        if name in self._buffers and _stays_buffer(value):
            # torch keeps a registered buffer a buffer when a tensor is assigned to its
            # name (``self.count += 1``, ``self.mean = new``): still in state_dict()
            self._buffers[name] = value
            object.__setattr__(self, name, value)
            return
        # a parameter or child reassigned keeps its place, as in torch's dicts, so the
        # parameter order (an optimizer's state indices) and state_dict order match
        if isinstance(value, Tensor) and value.requires_grad and name in params:
            params[name] = value
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Module) and name in children:
            children[name] = value
            object.__setattr__(self, name, value)
            return
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

    # torch's private tables, which scripts read (``model._modules.items()``)
    @property
    def _modules(self) -> dict:
        return self._children

    @property
    def _parameters(self) -> dict:
        return self._params

    def __delattr__(self, name: str) -> None:
        for table in (self._params, self._buffers, self._children):
            table.pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name: str, t: Tensor | None, persistent: bool = True) -> None:
        """A tensor the module keeps but does not train; ``persistent=False`` leaves it
        out of ``state_dict()``, as torch does (a causal mask made in ``__init__``)."""
        self._buffers.pop(name, None)
        if t is not None:
            self._buffers[name] = t
        transient = self.__dict__.setdefault("_transient", set())
        (transient.discard if persistent else transient.add)(name)
        object.__setattr__(self, name, t)

    def register_parameter(self, name: str, t: Tensor | None) -> None:
        if t is not None:
            t.requires_grad_()
        setattr(self, name, t)

    def add_module(self, name: str, module: Module | None) -> None:
        setattr(self, name, module)

    register_module = add_module

    # -- the tree --
    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):  # fmt: skip
        """(dotted name, parameter) pairs; ``prefix`` is joined with a dot, as torch's.
        A parameter reached twice (tied weights, a module used in two places) is listed
        once, under its first name, as torch lists it: an optimizer must update it once."""
        head = f"{prefix}." if prefix and not prefix.endswith(".") else prefix
        mods = self.named_modules(remove_duplicate=remove_duplicate) if recurse else [("", self)]
        seen: set[int] = set()
        for mname, m in mods:
            for n, p in m._params.items():
                if remove_duplicate:
                    if id(p) in seen:
                        continue
                    seen.add(id(p))
                yield head + (f"{mname}.{n}" if mname else n), p

    def parameters(self, recurse: bool = True) -> list[Tensor]:
        """A list (not a generator): it can be passed to an optimizer and read again;
        ``next(m.parameters())`` still gives the first, as torch's generator does."""
        return ParameterSeq(p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", persistent_only: bool = False,
                      remove_duplicate: bool = True):  # fmt: skip
        head = f"{prefix}." if prefix and not prefix.endswith(".") else prefix
        for mname, m in self.named_modules(remove_duplicate=remove_duplicate):
            skip = m.__dict__.get("_transient", ()) if persistent_only else ()
            for b, t in m._buffers.items():
                if b not in skip:
                    yield head + (f"{mname}.{b}" if mname else b), t

    def buffers(self) -> list[Tensor]:
        return [t for _, t in self.named_buffers()]

    def named_children(self) -> Iterator[tuple[str, Module]]:
        yield from self._children.items()

    def children(self) -> Iterator[Module]:
        yield from self._children.values()

    def get_submodule(self, target: str) -> Module:
        """The module at dotted path ``target`` ("" is this one), as torch's."""
        mod = self
        for part in target.split(".") if target else ():
            child = mod._children.get(part)
            if child is None:
                raise ScellisError(f"{type(mod).__name__} has no submodule {part!r} ({target!r})")
            mod = child
        return mod

    def get_parameter(self, target: str) -> Tensor:
        """The parameter at dotted path ``target``, as torch's."""
        return self._member(target, "_params", "parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``, as torch's."""
        return self._member(target, "_buffers", "buffer")

    def _member(self, target: str, table: str, what: str) -> Tensor:
        owner, _, name = target.rpartition(".")
        found = getattr(self.get_submodule(owner), table).get(name)
        if found is None:
            raise ScellisError(f"{type(self).__name__} has no {what} {target!r}")
        return found

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:  # fmt: skip
        """This module and every one below it, depth first, by dotted path; a module
        reached twice is listed once (torch's ``remove_duplicate``)."""
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for n, c in self._children.items():
            yield from c.named_modules(memo, f"{prefix}.{n}" if prefix else n, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """``fn`` on every child (depth first) and then on this module, as torch does."""
        for c in self._children.values():
            c.apply(fn)
        fn(self)
        return self

    # -- state --
    def live_state(self) -> dict[str, Tensor]:
        """Parameters and persistent buffers by their dotted paths in this tree: the
        live tensors themselves, what loading writes into."""
        # every path, tied ones too: torch's state_dict() keeps each name
        out = dict(self.named_parameters(remove_duplicate=False))
        out.update(self.named_buffers(persistent_only=True, remove_duplicate=False))
        return out

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters and persistent buffers by dotted path, under torch's names where
        a torch-shaped layer packs or names them differently (``export_state``); the
        live storage wherever no packing is needed, so copy them to keep a snapshot.
        Detached, as torch's (an in-place edit of an entry is no autograd error), unless
        ``keep_vars``."""
        out = exported(self, self.live_state())
        if not keep_vars:
            out = {k: v.detach() if v.requires_grad else v for k, v in out.items()}
        if prefix:
            out = {prefix + k: v for k, v in out.items()}
        if destination is not None:
            destination.update(out)
            return destination
        return out

    def export_state(self, state: dict) -> dict:
        """This module's entries (keys relative to it) under torch's names: the inverse
        of ``translate_state``; unchanged unless a torch-shaped layer says otherwise."""
        return state

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Write ``state_dict``'s values (tensors, torch tensors, arrays or nested lists)
        into the parameters and buffers in place; ``(missing_keys, unexpected_keys)``.
        With ``strict`` any missing or unexpected key is an error, as in torch. Modules
        may translate foreign names first (``translate_state``)."""
        return load_state(self, state_dict, strict)

    def translate_state(self, state: dict) -> dict:
        """Incoming entries (keys relative to this module) under this module's own names;
        a module whose torch twin names or packs parameters differently overrides it."""
        return state

    def set_parameter(self, path: str, value: Tensor) -> None:
        """Give the parameter at dotted ``path`` the storage of ``value``, keeping the
        parameter object (anything holding it, an optimizer, sees the new values)."""
        mod: Module = self
        *parts, last = path.split(".")
        for p in parts:
            mod = mod._children[p]
        if last not in mod._params:
            raise KeyError(path)
        old = mod._params[last]
        if tuple(old.shape) != tuple(value.shape):
            raise ScellisError(f"{path}: a value of shape {value.shape}, the parameter {old.shape}")
        rebind(old, value.detach())
        old.requires_grad = True

    def to(self, *args, device=None, dtype=None) -> Module:
        """Move (``"webgpu"``, ``"reference"``, ``"cpu"``) and/or cast (``"f64"``,
        ``scellis.f32``) every parameter and buffer in place; integer tensors keep
        their dtype, as in torch."""
        for a in args:
            if _is_dtype(a):
                dtype = a
            else:
                device = a
        dt = as_dtype(dtype) if dtype is not None else None
        dev = device
        for t in [*self.parameters(), *self.buffers()]:
            rebind(t, transfer(t, dev, dt if t.dtype.is_float else None))
        for m in self.modules():  # blocks drawing tensors later use the new home
            ctx = m.__dict__.get("ctx")
            if isinstance(ctx, dict):
                if dev is not None:
                    ctx["device"] = get_device(dev)
                if dt is not None:
                    ctx["dtype"] = dt
        return self

    def cpu(self) -> Module:
        return self.to("reference")

    def double(self) -> Module:
        return self.to(dtype="f64")

    def float(self) -> Module:
        return self.to(dtype="f32")

    def half(self) -> Module:
        return self.to(dtype="f16")

    # -- training mode and gradients --
    def train(self, mode: bool = True) -> Module:
        for _, m in self.named_modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            p.grad = None if set_to_none or p.grad is None else p.grad.zeros_like()

    def __call__(self, *args, **kwargs):
        if autocast_applies():
            return call_autocast(self, self._forward_with_hooks, args, kwargs)
        return self._forward_with_hooks(*args, **kwargs)

    def _forward_with_hooks(self, *args, **kwargs):
        if "_grad_hooks" in self.__dict__ and (grad_hooks := grad_hooks_apply(self)):
            return call_with_grad_hooks(self, grad_hooks, self._forward_hooked, args, kwargs)
        return self._forward_hooked(*args, **kwargs)

    def _forward_hooked(self, *args, **kwargs):
        hooks = self.__dict__.get("_hooks")
        if not hooks or not (hooks["pre"] or hooks["post"]):
            return self.forward(*args, **kwargs)
        return call_with_hooks(self, hooks, args, kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` after each call; a value it returns replaces
        the output. The handle's ``remove()`` takes it away."""
        return add_hook(self, "post", hook, with_kwargs)

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` before each call; a value it returns replaces the
        positional arguments (a tuple, or one value)."""
        return add_hook(self, "pre", hook, with_kwargs)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` once the gradient of the call's
        tensor argument is known; a tuple it returns replaces ``grad_input``."""
        return add_grad_hook(self, hook, "post")

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` as the gradient of the call's result arrives;
        a tuple it returns replaces ``grad_output``."""
        return add_grad_hook(self, hook, "pre")

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    def extra_repr(self) -> str:
        cfg = self.__dict__.get("config")
        if cfg is None or not hasattr(cfg, "__dataclass_fields__"):
            return ""
        return ", ".join(f"{k}={getattr(cfg, k)!r}" for k in cfg.__dataclass_fields__)

    def __repr__(self) -> str:
        lines = [f"({n}): " + repr(c).replace("\n", "\n  ") for n, c in self._children.items()]
        head = f"{type(self).__name__}({self.extra_repr() if not lines else ''}"
        return head + ("\n  " + "\n  ".join(lines) + "\n)" if lines else ")")


def _is_dtype(x) -> bool:
    if not isinstance(x, str):
        return hasattr(x, "itemsize") and hasattr(x, "is_float")
    try:
        as_dtype(x)
    except DTypeError:
        return False
    return True


class ModuleList(Module):
    """An indexed list of modules: children named ``0``, ``1``, ..."""

    incremental = True  # a container: its children are checked on their own

    def __init__(self, mods=()):
        super().__init__()
        object.__setattr__(self, "_list", [])
        for m in mods:
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        self._children[str(len(self._list))] = module
        self._list.append(module)
        return self

    def extend(self, modules) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __iter__(self):
        return iter(self._list)

    def __len__(self) -> int:
        return len(self._list)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ModuleList(self._list[i])
        return self._list[i]

    # torch's list edits: the children are renumbered 0..n-1 after each, as torch does
    def _renumber(self, mods: list) -> None:
        for k in list(self._children):
            self.__dict__.pop(k, None)
        self._children.clear()
        self._list.clear()
        self.extend(mods)

    def __setitem__(self, i: int, module: Module) -> None:
        mods = list(self._list)
        mods[i] = module
        self._renumber(mods)

    def __delitem__(self, i) -> None:
        mods = list(self._list)
        del mods[i]
        self._renumber(mods)

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._list)
        mods.insert(index, module)
        self._renumber(mods)
