"""Added tokens found in text (data layer): leftmost, longest first, as ``tokenizers`` does.

One regex alternation of every added token tries each of them at each position of the
text, so a file with 100,000 added tokens made encoding take hours. Here the tokens
live in a dict by their text, with the lengths they come in per first character: a
C-level search for any first character finds the next place a token can start, and
there only those lengths are looked up. Building is linear in the tokens' text and
matching costs at most the number of distinct lengths per candidate position (an
added token is at most ``spec.MAX_ADDED_CHARS`` long).

``lstrip``/``rstrip`` tokens take the whitespace beside them, not reaching back into
the previous match.
"""

from __future__ import annotations

import re

from .uregex import WHITE_SPACE


class AddedTokens:
    """The added tokens of one kind (raw or normalized): ``split(text)``."""

    def __init__(self, tokens: list[dict]):
        self.table: dict[str, tuple[int, bool, bool]] = {}
        lengths: dict[str, set[int]] = {}
        for a in tokens:  # the first token with a given text wins, as in the file's order
            content = a["content"]
            if content and content not in self.table:
                self.table[content] = (a["id"], bool(a.get("lstrip")), bool(a.get("rstrip")))
                lengths.setdefault(content[0], set()).add(len(content))
        self.lengths = {c: sorted(ls, reverse=True) for c, ls in lengths.items()}
        firsts = "".join(re.escape(c) for c in sorted(self.lengths))
        self.start = re.compile(f"[{firsts}]") if firsts else None

    def _at(self, text: str, i: int) -> tuple[int, tuple] | None:
        """The longest token starting at ``i``: (its end, its entry)."""
        for n in self.lengths[text[i]]:
            hit = self.table.get(text[i : i + n])
            if hit is not None:
                return i + n, hit
        return None

    def split(self, text: str) -> list[tuple[str, int | None]]:
        """(piece, None) for plain text and ("", id) for each added token, in order."""
        if self.start is None:
            return [(text, None)] if text else []
        out, at, pos, n = [], 0, 0, len(text)
        while (m := self.start.search(text, pos)) is not None:
            i = m.start()
            found = self._at(text, i)
            if found is None:
                pos = i + 1
                continue
            end, (tid, lstrip, rstrip) = found
            if lstrip:
                while i > at and text[i - 1] in WHITE_SPACE:
                    i -= 1
            if rstrip:
                while end < n and text[end] in WHITE_SPACE:
                    end += 1
            if i > at:
                out.append((text[at:i], None))
            out.append(("", tid))
            at = pos = end
        if at < n:
            out.append((text[at:], None))
        return out
