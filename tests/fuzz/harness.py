"""The fuzz harness's pieces: inputs (random bytes, mutations of a valid file) and one
checked call (success or a ScellisError of one line; bounded peak memory and time)."""

from __future__ import annotations

import os
import time
import tracemalloc
from collections import Counter

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from scellis.base.errors import ScellisError

CASES: Counter = Counter()  # target -> cases tried (the session prints them)
REFUSED: Counter = Counter()  # target -> cases that ended in a ScellisError
SECONDS: Counter = Counter()
MEMORY = 96 << 20  # peak bytes one case may allocate (tracemalloc)
TIME_S = 10.0  # seconds one case may take (with tracemalloc on: several times slower)


SCALE = float(os.environ.get("SCELLIS_FUZZ_SCALE", "1"))  # > 1 for a longer hunt


def budget(n: int):
    """Hypothesis settings of a target: n examples (times SCELLIS_FUZZ_SCALE),
    reproducible, no deadline of its own."""
    return settings(
        max_examples=max(1, int(n * SCALE)),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )


_SPECIAL = [0x00, 0x01, 0x7F, 0x80, 0xFF]


@st.composite
def mutations(draw, seed: bytes, donors: tuple[bytes, ...] = ()) -> bytes:
    """``seed`` with 1-4 edits: flip a bit, set a byte or a 4-byte word to an edge value,
    insert or delete a run, splice in a run of another valid file, or cut the end."""
    b = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "word", "insert", "delete", "splice", "cut"]))
        pos = draw(st.integers(0, max(len(b) - 1, 0)))
        if op == "flip" and b:
            b[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and b:
            b[pos] = draw(st.sampled_from(_SPECIAL) | st.integers(0, 255))
        elif op == "word":
            word = draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00",
                                         b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80"]))  # fmt: skip
            b[pos : pos + 4] = word
        elif op == "insert":
            b[pos:pos] = draw(st.binary(min_size=1, max_size=64))
        elif op == "delete":
            del b[pos : pos + draw(st.integers(1, 64))]
        elif op == "splice" and donors:
            donor = draw(st.sampled_from(donors))
            start = draw(st.integers(0, max(len(donor) - 1, 0)))
            b[pos:pos] = donor[start : start + draw(st.integers(1, 256))]
        elif op == "cut":
            del b[pos:]
    return bytes(b)


def inputs(seed: bytes, donors: tuple[bytes, ...] = (), random_size: int = 2048):
    """Random bytes, or a mutation of ``seed`` (three times as often)."""
    return st.one_of(
        st.binary(max_size=random_size),
        mutations(seed, donors),
        mutations(seed, donors),
        mutations(seed, donors),
    )


def checked(target: str, fn, *args) -> object:
    """``fn(*args)``: its result, or None when it raised a ScellisError of one line. Any
    other exception propagates (hypothesis reports and shrinks it); so does a case over
    the memory or time bound."""
    CASES[target] += 1
    started = tracemalloc.is_tracing()
    if not started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.monotonic()
    try:
        return fn(*args)
    except ScellisError as e:
        REFUSED[target] += 1
        text = str(e)
        assert text.strip() and "\n" not in text.strip(), f"not one line: {text!r}"
        return None
    finally:
        took = time.monotonic() - t0
        peak = tracemalloc.get_traced_memory()[1] - base
        if not started:
            tracemalloc.stop()
        SECONDS[target] += took
        assert peak < MEMORY, f"{target}: one case allocated {peak} bytes"
        assert took < TIME_S, f"{target}: one case took {took:.1f} s"
