"""torch.nn.utils' weight normalisation (nn layer): ``parametrizations.weight_norm``
and the older ``nn.utils.weight_norm``.

The module's ``weight`` becomes a property, ``g * v / ||v||`` with the norm over every
axis but ``dim``, recomputed on each read, so the forward (and autograd) sees it as
torch's does. The trained tensors carry torch's names: ``parametrizations.weight.
original0`` (g) and ``original1`` (v), or ``weight_g`` and ``weight_v`` for the older
form, so state dicts cross key for key. Other parametrizations are refused by name.
"""

from __future__ import annotations

from ...autograd import no_grad
from ...base.errors import ScellisError
from ...catalog.module import Module


def norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every axis but ``dim`` (kept as size-1 axes)."""
    if dim is None:
        return v.square().sum().sqrt()
    dim = dim % v.ndim
    axes = tuple(a for a in range(v.ndim) if a != dim)
    return v.square().sum(axes, keepdim=True).sqrt() if axes else v.abs()


def _weight_of(g, v, dim):
    return v * (g / norm_except_dim(v, dim))


class _Holder(Module):
    """``parametrizations.weight``: holds g and v as ``original0`` / ``original1``."""


def _with_property(module: Module, name: str, compute) -> None:
    """``module.<name>`` read through ``compute(module)``: the instance moves to a
    subclass of its own class that adds the property (other instances keep theirs)."""
    cls = type(module)
    sub = type(cls.__name__, (cls,), {name: property(compute)})
    sub.__qualname__ = cls.__qualname__
    object.__setattr__(module, "__class__", sub)


def _split(module: Module, name: str, dim):
    w = getattr(module, name, None)
    if w is None or name not in module._params:
        raise ScellisError(f"weight_norm: the module has no parameter {name!r}")
    with no_grad():
        g = norm_except_dim(w.detach(), dim).detach().clone().requires_grad_()
        v = w.detach().clone().requires_grad_()
    module._params.pop(name)
    module.__dict__.pop(name, None)
    return g, v


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """torch.nn.utils.parametrizations.weight_norm(module, name='weight', dim=0)."""
    g, v = _split(module, name, dim)
    holders = module._children.get("parametrizations") or Module()
    holder = _Holder()
    holder.original0, holder.original1 = g, v
    setattr(holders, name, holder)
    module.parametrizations = holders

    def compute(m):
        h = getattr(m.parametrizations, name)
        return _weight_of(h.original0, h.original1, dim)

    _with_property(module, name, compute)
    return module


def legacy_weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """torch.nn.utils.weight_norm (the older form): ``<name>_g`` and ``<name>_v``."""
    g, v = _split(module, name, dim)
    setattr(module, f"{name}_g", g)
    setattr(module, f"{name}_v", v)

    def compute(m):
        return _weight_of(getattr(m, f"{name}_g"), getattr(m, f"{name}_v"), dim)

    _with_property(module, name, compute)
    return module


def _refuse(name: str, instead: str):
    def refuse(*args, **kwargs):
        raise ScellisError(f"nn.utils.parametrizations.{name} is not supported; {instead}")

    refuse.__name__ = name
    return refuse


spectral_norm = _refuse("spectral_norm", "normalise the weight by its largest singular value "
                        "(a power iteration) in forward")  # fmt: skip
orthogonal = _refuse("orthogonal", "re-orthogonalise the weight after each optimizer step")
