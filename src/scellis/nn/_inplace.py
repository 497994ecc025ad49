"""torch's ``inplace=True`` on activations and dropout (nn layer).

torch writes the result into the input tensor and returns that tensor. A script that
calls ``F.relu(h, inplace=True)`` as a statement, or keeps the pre-activation tensor
around, reads the new values afterwards; ignoring the flag would leave them silently
stale. The write goes through the tensor's one in-place path (``_assign``), so it is
refused where torch refuses it (a leaf that requires grad) and autograd sees it.
"""

from __future__ import annotations

import functools
import inspect


def write_back(x, out, inplace: bool, name: str):
    """``out`` written into ``x`` when ``inplace`` (then ``x`` is returned), else ``out``
    (also when the op handed back ``x`` itself: dropout outside training)."""
    return x._assign(out, f"{name}_") if inplace and out is not x else out


def honours_inplace(fn):
    """``fn(x, ..., inplace=False)`` whose ``inplace`` (by keyword or position) writes the
    result back into ``x``. The flag's position is found once, not per call."""
    names = list(inspect.signature(fn).parameters)
    at = names.index("inplace")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        inplace = kwargs.get("inplace", args[at] if len(args) > at else False)
        x = args[0] if args else kwargs[names[0]]
        return write_back(x, out, inplace, fn.__name__)

    return wrapper
