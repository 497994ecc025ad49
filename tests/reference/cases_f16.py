"""Op cases in f16 (mixed precision): the fused recurrent, flash attention, norm and
windows-over-time rows with their float inputs cast to f16 and the result cast back.

On the reference device f16 is emulated (inputs widened, maths in f32, each stored value
rounded to f16 once); the WebGPU case table holds its f16 kernels to that. These rows
have no torch twin (torch rounds every intermediate of its f16 maths) and no finite
differences (f16 rounding steps), so they live outside the main table.
"""

from __future__ import annotations

from dataclasses import replace

import cases_attention
import cases_norm
import cases_recurrent
import cases_unfold


def through_f16(fn):
    def run(*xs):
        return fn(*(x.cast("f16") for x in xs)).cast(xs[0].dtype)

    return run


F16_CASES = [
    replace(c, name=f"{c.name}_f16", fn=through_f16(c.fn), torch=None, tags=frozenset({"no_fd"}))
    for c in cases_recurrent.CASES + cases_attention.CASES + cases_norm.CASES + cases_unfold.CASES
]
