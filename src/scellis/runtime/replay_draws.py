"""Random ops in a replayed step (runtime layer): the host's Philox streams advance as eagerly.

A random op's kernel takes its Philox counter (stream key, draw index, step) as meta
words the host hands out with ``Generator.next_draw``. While a step is recorded, every
draw is noted with the stream it came from. A replay calls ``next_draw`` on the same
streams in the same order and writes the counters it got into the schedule's
counter table, a small device buffer the random launches read their meta words from
(devices/webgpu/replay.py), so the host's stream positions move exactly as an
eager step's would: a run that switches between eager and replayed steps, or resumes
from a checkpoint, draws the same masks, bit for bit. A draw that repeats a counter
of the same step (an activation checkpoint's recompute rewinds the stream to redraw
its forward's masks) takes that draw's counter again.

A step is refused when a named stream is set on the host inside it other than by
such a rewind (a replay runs none of the step's Python, so the stream must stand
where the step begins), or when its random ops and its draws do not pair up one to
one.
"""

from __future__ import annotations

import contextlib

from ..base.rng import draw_watchers
from ..devices.webgpu.kernels.random import with_counter
from ..devices.webgpu.replay import is_random
from .creation import _generators, generator

COUNTER_ATTRS = ("key", "draw", "step")


def _id(source):
    return source if isinstance(source, str) else id(source)


class Draws:
    """The draws one recorded step made, in order, as a plan a replay follows: each
    is ``("next", stream)`` (the stream's next draw) or ``("again", i)`` (the counter
    of the step's draw ``i`` once more: an activation checkpoint's recompute rewinds
    the stream to redraw its forward's masks). A stream of the runtime's named
    registry is kept by name, so a registry reloaded between steps (a restored
    checkpoint) is followed; any other generator is kept itself."""

    def __init__(self):
        self.counters: list = []  # (key, draw, step) of each draw
        self.plan: list = []
        self.why = ""  # why the draws cannot be replayed ('' when they can)
        self._last: dict = {}  # stream -> (draw, step) of its last fresh draw
        self._fresh: dict = {}  # (stream, counter) -> the plan index that drew it
        # where the named streams stood as the step began: a replay starts from there
        self._start = {n: (g.seed, g.step, g.draw) for n, g in _generators.items()}

    def __call__(self, gen, out) -> None:
        source = gen.name if _generators.get(gen.name) is gen else gen
        counter = (tuple(out[0]), out[1], out[2])
        earlier = self._fresh.get((_id(source), counter))
        self.counters.append(counter)
        if earlier is not None:
            self.plan.append(("again", earlier))
            return
        self._fresh[(_id(source), counter)] = len(self.plan)
        self.plan.append(("next", source))
        prev = self._last.get(_id(source))
        if prev is None and isinstance(source, str):
            prev = self._start.get(source, (gen.seed, out[2], 0))
            if prev != (gen.seed, out[2], out[1]) and not self.why:
                self.why = (
                    f"the step sets the Philox stream {source!r} on the host before drawing "
                    "from it (set it before the step: a replay runs none of the step's Python)"
                )
        elif prev is not None and (out[1], out[2]) != (prev[0] + 1, prev[1]) and not self.why:
            self.why = "a Philox stream is moved on the host between the step's draws"
        self._last[_id(source)] = (out[1], out[2])

    def key(self) -> list:
        return [(kind, _id(s) if kind == "next" else s) for kind, s in self.plan]


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
    """'' when each random op of ``entries`` took the step's next draw, in order, and
    the draws can be replayed; else why not."""
    if draws.why:
        return draws.why
    ops = [e for e in entries if is_random(e.op)]
    if len(ops) != len(draws.counters):
        return (
            f"the step ran {len(ops)} random ops but drew {len(draws.counters)} times from "
            "the host's Philox streams"
        )
    for e, counter in zip(ops, draws.counters):
        if _counter(e.attrs) != counter:
            return f"a {e.op} op does not draw at the counter its stream handed out"
    return ""


def same_draws(a: Draws, b: Draws) -> bool:
    return a.key() == b.key()


def replay_counters(plan: list) -> list:
    """Each draw's counter for one replay of ``plan``: fresh draws advance their
    streams here, as the eager step's ``next_draw`` would."""
    out: list = []
    for kind, what in plan:
        if kind == "again":
            out.append(out[what])
            continue
        gen = generator(what) if isinstance(what, str) else what
        out.append(gen.next_draw())
    return out


def fixed_attrs(op: str, attrs: dict) -> dict:
    """``attrs`` less a random op's counter: what must repeat between recorded steps."""
    return {k: v for k, v in attrs.items() if k not in COUNTER_ATTRS} if is_random(op) else attrs


def fixed_meta(op: str, meta: list) -> list:
    """A launch's meta words less a random op's counter words."""
    return with_counter(meta, (0, 0), 0, 0) if is_random(op) else meta
