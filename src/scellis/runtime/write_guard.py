"""The one guard of an in-place write (runtime layer).

Every write into an existing tensor that autograd does not record calls
``guard_write`` first: torch's in-place methods and operators on a tensor (``add_``,
``+=``, ``x[i] = v``, ``copy_``, ``zero_``, ``masked_fill_``..., all through
``torchlike._assign``) and the engine's fused writes (``dispatch.apply_inplace``:
optimizer updates, gradient and parameter packing, loads into storage).
"""

from __future__ import annotations

from ..autograd.mode import is_grad_enabled
from ..base.errors import AutogradError


def guard_write(t, what: str) -> None:
    """Refuse ``what`` on ``t`` while gradients are on and ``t`` requires grad (autograd
    could not see the change: torch refuses an in-place op on a leaf that requires grad
    the same way; ``with scellis.no_grad():`` is the way to mean it). Otherwise count the
    write on ``t``'s storage, so a backward that saved any tensor over that storage (``t``
    itself or a view of it) refuses, as torch's version counter makes it."""
    if is_grad_enabled() and t.requires_grad:
        raise AutogradError(
            f"{what} on a tensor that requires grad: autograd cannot see this change; "
            "wrap it in `with scellis.no_grad():`"
        )
    t._buf.version = getattr(t._buf, "version", 0) + 1
