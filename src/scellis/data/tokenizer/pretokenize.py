"""Pre-tokenizers of ``tokenizer.json`` (data layer): GPT-2's byte-level split, Metaspace.

The GPT-2 pattern ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|
\\s+(?!\\S)|\\s+`` needs Unicode classes Python's ``re`` lacks, so ``gpt2_split`` scans
it by hand, classifying characters with ``unicodedata`` (letters: category L*, numbers:
N*, whitespace: the Unicode White_Space set the Rust regex crate's ``\\s`` means).
Each pre-tokenizer maps a piece to a list of pieces. The entries were checked by
``spec`` (types, fields, and a Split regex's shape by ``uregex.check_regex``).
"""

from __future__ import annotations

import unicodedata

from .uregex import WHITE_SPACE, compile_rust

_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")


def _kind(c: str) -> str:
    """'s' whitespace, 'L' letter, 'N' number, 'o' anything else."""
    if c in WHITE_SPACE:
        return "s"
    cat = unicodedata.category(c)[0]
    return cat if cat in "LN" else "o"


def gpt2_split(text: str) -> list[str]:
    """``text`` cut as GPT-2's regex finds its matches (they cover every character)."""
    out, i, n = [], 0, len(text)
    kinds = [_kind(c) for c in text]
    while i < n:
        c = text[i]
        if c == "'":
            hit = next((s for s in _CONTRACTIONS if text.startswith(s, i + 1)), None)
            if hit is not None:
                out.append(text[i : i + 1 + len(hit)])
                i += 1 + len(hit)
                continue
        start = i + 1 if c == " " and i + 1 < n and kinds[i + 1] != "s" else i
        k = kinds[start]
        if k != "s":  # ' ?\p{L}+', ' ?\p{N}+' or ' ?[^\s\p{L}\p{N}]+'
            j = start + 1
            while j < n and kinds[j] == k:
                j += 1
            out.append(text[i:j])
            i = j
            continue
        j = i + 1
        while j < n and kinds[j] == "s":
            j += 1
        if j < n and j - i > 1:  # '\s+(?!\S)': leave the last space to the next word
            j -= 1
        out.append(text[i:j])
        i = j
    return out


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (printable Latin-1 bytes map to themselves)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
          *range(ord("®"), ord("ÿ") + 1)]  # fmt: skip
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_CHAR = bytes_to_unicode()
CHAR_BYTE = {c: b for b, c in BYTE_CHAR.items()}


def byte_level(spec: dict):
    prefix = spec.get("add_prefix_space") is not False  # null or missing: true
    regex = spec.get("use_regex") is not False

    def run(piece: str, at_start: bool) -> list[str]:
        if prefix and not piece.startswith(" "):
            piece = " " + piece
        words = gpt2_split(piece) if regex else [piece]
        return ["".join(BYTE_CHAR[b] for b in w.encode("utf-8")) for w in words]

    return run


def _merged_with_next(s: str, delim: str) -> list[str]:
    """``s`` split before each ``delim`` (the delimiter starts the following piece)."""
    out, cur = [], ""
    for ch in s:
        if ch == delim and cur:
            out.append(cur)
            cur = ""
        cur += ch
    if cur:
        out.append(cur)
    return out


def metaspace_options(spec: dict) -> tuple[str, str]:
    """Metaspace's replacement character and prepend scheme (older files write
    ``add_prefix_space`` instead), shared with the decoder of the same name."""
    rep = spec.get("replacement") or "▁"
    scheme = spec.get("prepend_scheme")
    if scheme is None:
        scheme = "never" if spec.get("add_prefix_space") is False else "always"
    return rep, scheme


def metaspace(spec: dict):
    rep, scheme = metaspace_options(spec)
    split = spec.get("split") is not False

    def run(piece: str, at_start: bool) -> list[str]:
        piece = piece.replace(" ", rep)
        if not piece.startswith(rep) and (scheme == "always" or (scheme == "first" and at_start)):
            piece = rep + piece
        return _merged_with_next(piece, rep) if split else [piece]

    return run


def whitespace_split(spec: dict):
    def run(piece: str, at_start: bool) -> list[str]:
        return "".join(" " if c in WHITE_SPACE else c for c in piece).split()

    return run


def _pieces(text: str, spec: dict) -> list[tuple[str, bool]]:
    """``text`` as (piece, is a match) runs covering it, for a ``Split`` pattern."""
    pat = spec["pattern"]
    if "Regex" in pat:
        rx = compile_rust(pat["Regex"])
        spans = [m.span() for m in rx.finditer(text) if m.end() > m.start()]
    else:
        s, spans, at = pat["String"], [], 0
        while s and (k := text.find(s, at)) >= 0:
            spans.append((k, k + len(s)))
            at = k + len(s)
    out, at = [], 0
    for a, b in spans:
        if a > at:
            out.append((text[at:a], False))
        out.append((text[a:b], True))
        at = b
    if at < len(text):
        out.append((text[at:], False))
    return out


def split(spec: dict):
    behavior = (spec.get("behavior") or "Isolated").lower()  # one of spec.BEHAVIORS
    invert = spec.get("invert") is True

    def run(piece: str, at_start: bool) -> list[str]:
        runs = [(p, m != invert) for p, m in _pieces(piece, spec)]
        out: list[str] = []
        prev_match = False
        if behavior == "removed":
            return [p for p, m in runs if not m]
        if behavior == "isolated":
            return [p for p, _ in runs]
        if behavior == "contiguous":
            for p, m in runs:
                if m and out and prev_match:
                    out[-1] += p
                else:
                    out.append(p)
                prev_match = m
            return out
        if behavior == "mergedwithprevious":
            for p, m in runs:
                if m and out and not prev_match:
                    out[-1] += p
                else:
                    out.append(p)
                prev_match = m
            return out
        carry = ""  # mergedwithnext
        for p, m in runs:
            if m:
                if carry:
                    out.append(carry)
                carry = p
            else:
                out.append(carry + p)
                carry = ""
        if carry:
            out.append(carry)
        return out

    return run


def _is_punct(c: str) -> bool:
    o = ord(c)
    ascii_punct = 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126
    return ascii_punct or unicodedata.category(c)[0] == "P"


def bert(spec: dict):
    """BERT's pre-tokenizer: split on whitespace (dropped), then each punctuation mark alone."""

    def run(piece: str, at_start: bool) -> list[str]:
        out, cur = [], ""
        for c in piece:
            if c in WHITE_SPACE:
                if cur:
                    out.append(cur)
                cur = ""
            elif _is_punct(c):
                if cur:
                    out.append(cur)
                out.append(c)
                cur = ""
            else:
                cur += c
        if cur:
            out.append(cur)
        return out

    return run


def sequence(spec: dict):
    steps = [make(s) for s in spec["pretokenizers"]]

    def run(piece: str, at_start: bool) -> list[str]:
        pieces = [(piece, at_start)]
        for step in steps:
            # a piece's first part keeps its place at the start of the text; the rest do not
            pieces = [(sub, f and i == 0) for p, f in pieces for i, sub in enumerate(step(p, f))]
        return [p for p, _ in pieces]

    return run


KINDS = {
    "ByteLevel": byte_level,
    "Metaspace": metaspace,
    "WhitespaceSplit": whitespace_split,
    "Split": split,
    "BertPreTokenizer": bert,
    "Sequence": sequence,
}


def make(spec: dict | None):
    """A function (piece, starts the text) -> pieces for a ``pre_tokenizer`` entry that
    ``spec`` has checked."""
    if spec is None:
        return lambda piece, at_start: [piece]
    return KINDS[spec["type"]](spec)
