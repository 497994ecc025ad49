"""torch.utils.checkpoint's ``checkpoint``: the same values and gradients as calling the
function, without the memory saving.

torch's checkpoint drops the function's intermediate activations and recomputes them
in backward. Here the function runs once and its tape is kept, so the results and
gradients are exactly the plain call's, and memory is what the plain call takes. A
training step that must fit in less memory should use smaller batches or the record's
own precision settings.
"""

from __future__ import annotations


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check=None,
               debug=None, preserve_rng_state=True, **kwargs):  # fmt: skip
    """``function(*args, **kwargs)``, exactly (see the module's note on memory)."""
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    """The modules of ``functions`` (a Sequential or a list) applied in order."""
    mods = list(functions.children()) if hasattr(functions, "children") else list(functions)
    for m in mods:
        input = m(input)  # noqa: A001
    return input
