"""An unclosed flow '{' or '[' is reported at the end of the line its close was due on,
naming where it opened, not at the next key's ':' one line later."""

import random

import pytest

from scellis.base.errors import Diagnostic
from scellis.sml.loader import load


def _document(rng: random.Random, bracket: str, indent: int):
    """Block lines with one flow collection on a random line; its line number (1-based),
    the line's text and the column of its opening bracket."""
    pad = " " * indent
    keys = [f"k{i}" for i in range(rng.randint(3, 30))]
    at = rng.randrange(len(keys) - 1)  # a key follows it: the parser notices there
    lines = ["outer:"] if indent else []
    for i, key in enumerate(keys):
        if i != at:
            lines.append(f"{pad}{key}: {rng.randint(-99, 99)}")
            continue
        items = [f"{chr(97 + j)}: {rng.randint(0, 9)}" for j in range(rng.randint(1, 4))]
        items = items if bracket == "{" else [str(rng.random()) for _ in items]
        lines.append(f"{pad}{key}: {bracket}{', '.join(items)}")
        opening = (len(lines), len(f"{pad}{key}: ") + 1)
    return lines, opening


@pytest.mark.parametrize("bracket", ["{", "["])
@pytest.mark.parametrize("indent", [0, 2])
def test_an_unclosed_flow_is_reported_at_the_end_of_its_line(bracket, indent):
    close = "}" if bracket == "{" else "]"
    for seed in range(8):
        rng = random.Random(seed * 7 + indent)
        lines, (row, col) = _document(rng, bracket, indent)
        closed = list(lines)
        closed[row - 1] += close
        load("\n".join(closed) + "\n")  # the same document closed is valid
        with pytest.raises(Diagnostic) as e:
            load("\n".join(lines) + "\n")
        assert (e.value.line, e.value.col) == (row, len(lines[row - 1]) + 1)
        assert f"'{bracket}' at line {row}, column {col} is not closed" in e.value.message
        assert e.value.fix == f"end the line with '{close}'"


def test_comments_blank_lines_and_the_stream_end_are_passed_over():
    text = "a: 1\nb: {x: 1, y: 2  # the pair\n\n# more\nc: 3\n"
    with pytest.raises(Diagnostic) as e:
        load(text)
    assert (e.value.line, e.value.col) == (2, len("b: {x: 1, y: 2") + 1)
    for text in ("a: [1, 2", "a: [1, 2\n"):
        with pytest.raises(Diagnostic) as e:
            load(text)
        assert (e.value.line, e.value.col) == (1, 9)


def test_a_flow_over_several_lines_ends_on_its_last_one():
    with pytest.raises(Diagnostic) as e:
        load("a: {x: 1,\n    y: 2\nb: 3\n")
    assert (e.value.line, e.value.col, e.value.message.count("line 1, column 4")) == (2, 9, 1)


def test_a_fault_inside_the_flow_keeps_the_parsers_own_place():
    # further indented than its opening line, so inside the flow: not an unclosed one
    with pytest.raises(Diagnostic) as e:
        load("b: {x: 1,\n   y: 2 z: 3}\n")
    assert (e.value.line, e.value.col) == (2, 10) and "not closed" not in e.value.message
