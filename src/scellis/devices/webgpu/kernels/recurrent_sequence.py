"""A whole recurrent sequence in one launch (devices layer): the ``fast`` tier's form.

The step kernels (``recurrent.py``) launch once per time step each way, so a short
sequence of a small layer costs its steps' launches (the LSTM forecaster: 40 of its
85 dispatches per step), and on a real GPU a replayed step's time is those launches'
host cost, not their work. Where the step's kernel choice fuses training kernels and a
step has at most ``SEQUENCE_MAX`` (b, k) outputs, the ``step`` variant's own body runs
inside one workgroup that walks the time steps itself, with a storage and workgroup
barrier between steps (each step reads what the previous one stored). Every (b, k)
computes exactly what its step kernel computes, in the same order, so the results are
the ``step`` variant's bit for bit; only the launches are gone. Larger layers keep
their per-step launches, whose many workgroups fill a GPU, and so does a software
adapter, which runs one workgroup on one CPU thread (``recurrent._whole_sequence``).
"""

from __future__ import annotations

from .common import WG, Source, main_1d

SEQUENCE_MAX = 4096  # (b, k) outputs per step one workgroup walks (16 per invocation)

# the step kernels' meta words that change with the step: t, the carry slot read and
# the carry slot written (recurrent.py's step_source layouts)
_T, _SLOT_IN, _SLOT_OUT = "mt[3]", "mt[5]", "mt[6]"


def fits(outputs_per_step: int) -> bool:
    return outputs_per_step <= SEQUENCE_MAX


def _body_of(src: Source) -> str:
    """The per-element body a step kernel wrapped with ``main_1d``."""
    pre, post = main_1d("@@").split("@@")
    assert src.body.startswith(pre) and src.body.endswith(post), "not a main_1d kernel"
    return src.body[len(pre) : len(src.body) - len(post)]


def _private(text: str) -> str:
    return text.replace(_T, "seq_t").replace(_SLOT_IN, "seq_in").replace(_SLOT_OUT, "seq_out")


def sequence(step: Source, steps: int, reverse: bool, carry: tuple[int, int] | None) -> Source:
    """One launch of ``step`` (a step kernel built for any t) over every time step,
    forward or ``reverse``; ``carry`` = (the first carry slot's element, a slot's size)
    for a backward kernel's ping-pong carries."""
    body = _private(_body_of(step))
    step.fns = [_private(f) for f in step.fns]
    step.decls += ["var<private> seq_t: u32;", "var<private> seq_in: u32;",
                   "var<private> seq_out: u32;"]  # fmt: skip
    at = step.add_meta(steps, *(carry or (0, 0)))
    t = f"mt[{at}u] - 1u - s" if reverse else "s"
    slots = (
        f"    seq_in = mt[{at + 1}u] + ((mt[{at}u] - seq_t) % 2u) * mt[{at + 2}u];\n"
        f"    seq_out = mt[{at + 1}u] + ((mt[{at}u] - 1u - seq_t) % 2u) * mt[{at + 2}u];\n"
        if carry
        else ""
    )
    step.body = (
        f"@compute @workgroup_size({WG})\n"
        "fn main(@builtin(local_invocation_index) lid: u32) {\n"
        "  let n = mt[0];\n"
        f"  for (var s = 0u; s < mt[{at}u]; s++) {{\n"
        f"    seq_t = {t};\n{slots}"
        f"    for (var i = lid; i < n; i += {WG}u) {{\n{body}\n    }}\n"
        "    storageBarrier();\n    workgroupBarrier();\n  }\n}\n"
    )
    return step
