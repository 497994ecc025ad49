"""Random ops in a replayed step (runtime layer): the host's Philox streams advance as eagerly.

A random op's kernel takes its Philox counter (stream key, draw index, step) as meta
words the host hands out with ``Generator.next_draw``. While a step is recorded, every
draw is noted with the stream it came from. A replay calls ``next_draw`` on the same
streams in the same order and re-encodes each random launch with the counter it got
(the schedule's patched launches), so the host's stream positions move exactly as an
eager step's would: a run that switches between eager and replayed steps, or resumes
from a checkpoint, draws the same masks, bit for bit.

A step is refused when a named stream is set on the host inside it (a replay runs
none of the step's Python, so the stream must stand where the step begins), when
its random ops and its draws do not pair up one to one, or when a stream goes back
inside the step (an activation checkpoint redrawing its forward's masks): a replay
only moves streams forward.
"""

from __future__ import annotations

import contextlib

from ..base.rng import draw_watchers
from ..ops.table import OPS
from .creation import _generators, generator


def is_random(op: str) -> bool:
    d = OPS.get(op)
    return d is not None and d.family == "random"


class Draws:
    """The draws one recorded step made: (stream, (key, draw, step)) in order. A stream
    of the runtime's named registry is kept by name, so a registry reloaded between
    steps (a restored checkpoint) is followed; any other generator is kept itself."""

    def __init__(self):
        self.log: list = []
        self.moved = ""  # a named stream the step moved on the host, not by drawing
        # where the named streams stood as the step began: a replay starts from there
        self.start = {n: (g.seed, g.step, g.draw) for n, g in _generators.items()}

    def __call__(self, gen, out) -> None:
        named = _generators.get(gen.name) is gen
        source = gen.name if named else gen
        if named and source not in self.sources:
            was = self.start.get(source, (gen.seed, out[2], 0))
            if was != (gen.seed, out[2], out[1]):
                self.moved = self.moved or source
        self.log.append((source, out))

    @property
    def sources(self) -> list:
        return [s for s, _ in self.log]


@contextlib.contextmanager
def noting_draws():
    log = Draws()
    draw_watchers.append(log)
    try:
        yield log
    finally:
        draw_watchers.remove(log)


def _counter(attrs: dict) -> tuple:
    return tuple(attrs["key"]), attrs["draw"], attrs["step"]


def unpaired(entries, draws: Draws) -> str:
    """'' when each random op of ``entries`` took the next draw, in order, and no
    stream went back; else why the step's random ops cannot be replayed."""
    if draws.moved:
        return (
            f"the step sets the Philox stream {draws.moved!r} on the host before drawing "
            "from it (set it before the step: a replay runs none of the step's Python)"
        )
    ops = [e for e in entries if is_random(e.op)]
    if len(ops) != len(draws.log):
        return (
            f"the step ran {len(ops)} random ops but drew {len(draws.log)} times from the "
            "host's Philox streams"
        )
    last: dict = {}
    for e, (source, (key, draw, step)) in zip(ops, draws.log):
        if _counter(e.attrs) != (tuple(key), draw, step):
            return f"a {e.op} op does not draw at the counter its stream handed out"
        prev = last.get(id(source) if not isinstance(source, str) else source)
        if prev is not None and (draw, step) != (prev[0] + 1, prev[1]):
            return (
                "a Philox stream is rewound inside the step (an activation checkpoint "
                "redrawing its masks): a replay only moves streams forward"
            )
        last[id(source) if not isinstance(source, str) else source] = (draw, step)
    return ""


def same_sources(a: Draws, b: Draws) -> bool:
    key = [s if isinstance(s, str) else id(s) for s in a.sources]
    return key == [s if isinstance(s, str) else id(s) for s in b.sources]


def next_counter(source, attrs: dict) -> dict:
    """``attrs`` of a recorded random op with the counter its stream hands out now."""
    gen = generator(source) if isinstance(source, str) else source
    key, draw, step = gen.next_draw()
    return {**attrs, "key": key, "draw": draw, "step": step}
