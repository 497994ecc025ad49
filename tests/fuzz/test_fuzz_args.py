"""Command-line values, fuzzed: ``--set PATH=VALUE`` items (YAML values with anchors,
aliases, brackets, tags, long digit runs) and run references. Success or one
ScellisError, in bounded time and memory."""

from __future__ import annotations

from harness import budget, checked
from hypothesis import given
from hypothesis import strategies as st

from scellis.run.options import parse_set
from scellis.run.reference import parse_ref

PIECES = ["[", "]", "{", "}", ", ", ": ", "&a ", "*a", "&b ", "*b", "!!str ", "!!python/name:x ",
          "<<: ", "-", "\n", "  ", "'", '"', "#", "9" * 50, "1e999", ".nan", "0x", "0o7", "null",
          "~", "x", "optimizer", ".", "=", "\x00", "\x1b"]  # fmt: skip


def _joined(pieces):
    return "".join(pieces)


ITEMS = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=60).map(_joined),
    st.text(max_size=200),
    st.tuples(st.sampled_from(["seed", "optimizer.lr", "a.b.c"]),
              st.lists(st.sampled_from(PIECES), max_size=80).map(_joined))
    .map(lambda t: f"{t[0]}={t[1]}"),
)  # fmt: skip


@budget(150)
@given(ITEMS)
def test_set_items(item):
    checked("args-set", parse_set, item)


@budget(100)
@given(st.one_of(
    st.text(max_size=80),
    st.tuples(st.from_regex(r"[0-9a-f-]{1,30}", fullmatch=True),
              st.sampled_from(["@", ":", "@-", "@@", ""]),
              st.text(alphabet="0123456789bestlaw:@-", max_size=40)).map("".join),
))  # fmt: skip
def test_run_references(ref):
    checked("args-ref", parse_ref, ref)
