"""The shapes of ``tokenizer.json`` this reader supports, checked in one place (data layer).

A tokenizer.json comes from whoever shared a model, so every value in it is checked
against the shape the builders (``bpe``, ``wordpiece``, ``normalize``, ``pretokenize``,
``decode``, the post-processor) read, before any of them runs: a wrong type, a missing
field, an unknown ``type``, an id out of range or a list over its cap ends in one
ScellisError naming the field (``model.merges[3]``), never in a TypeError deep inside a
builder. Fields the reader does not use are left alone (files carry many). The caps are
far above what shipped tokenizers hold and bound the work and memory a file can ask for.

A shape is a function ``(value, where)`` that raises; ``check(spec)`` is the entry.
"""

from __future__ import annotations

from ...base.errors import ScellisError, shown
from .uregex import check_regex

MAX_BYTES = 64 << 20  # the largest tokenizer.json we read (Gemma 3's is about 33 MB)
MAX_ID = 1 << 24  # token ids: far above any shipped vocabulary (~262k)
MAX_ENTRIES = 1 << 21  # vocabulary entries and merges
MAX_ADDED = 1 << 17  # added tokens (shipped files hold up to a few thousand)
MAX_ADDED_CHARS = 512  # one added token's text: matching costs up to this per position
MAX_STEPS = 64  # entries of a Sequence, and template items
MAX_TEXT = 256  # a replacement, prefix or pattern string
MAX_REPEAT = 1 << 16  # a count a decoder repeats (Strip's start/stop) or a word cap


def fail(where: str, what: str):
    raise ScellisError(f"tokenizer.json: {where}: {what}")


def _field(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _kind(value) -> str:
    """What a JSON value is, for a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)  # fmt: skip


def _q(text) -> str:
    """A name or value from the file, short and on one line, for a message."""
    return shown(text, 40)


# -- scalar shapes -------------------------------------------------------------------------


def string(limit: int = MAX_TEXT, *, empty: bool = True, chars: int | None = None):
    """A string of at most ``limit`` characters (exactly ``chars`` when given)."""

    def check(value, where):
        if not isinstance(value, str):
            fail(where, f"expected a string, got {_kind(value)}")
        if len(value) > limit:
            fail(where, f"a {len(value)}-character string is over the {limit} cap")
        if not empty and not value:
            fail(where, "expected a non-empty string")
        if chars is not None and len(value) != chars:
            fail(where, f"expected {chars} character(s), got {_q(value)}")

    return check


def boolean(value, where):
    if not isinstance(value, bool):
        fail(where, f"expected true or false, got {_kind(value)}")


def integer(lo: int, hi: int):
    """An integer in [lo, hi] (JSON's true/false are no integers here)."""

    def check(value, where):
        if isinstance(value, bool) or not isinstance(value, int):
            fail(where, f"expected an integer, got {_kind(value)}")
        if not lo <= value <= hi:
            fail(where, f"{value} is outside {lo}..{hi}")

    return check


TOKEN_ID = integer(0, MAX_ID - 1)


def number(lo: float, hi: float):
    def check(value, where):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail(where, f"expected a number, got {_kind(value)}")
        if not lo <= value <= hi:
            fail(where, f"{value} is outside {lo}..{hi}")

    return check


def choice(*values: str):
    def check(value, where):
        if value not in values:
            got = _q(value) if isinstance(value, str) else _kind(value)
            fail(where, f"expected one of {', '.join(values)}, got {got}")

    return check


def nullable(shape):
    """``shape``, or null (the field's default)."""

    def check(value, where):
        if value is not None:
            shape(value, where)

    return check


# -- compound shapes -----------------------------------------------------------------------


def list_of(shape, limit: int):
    def check(value, where):
        if not isinstance(value, list):
            fail(where, f"expected a list, got {_kind(value)}")
        if len(value) > limit:
            fail(where, f"{len(value)} entries are over the {limit} cap")
        for i, item in enumerate(value):
            shape(item, f"{where}[{i}]")

    return check


def fields(required: dict | None = None, optional: dict | None = None):
    """An object with the ``required`` fields and maybe the ``optional`` ones (each of
    which may also be null); other fields are not read, so not checked."""
    required, optional = required or {}, optional or {}

    def check(value, where):
        if not isinstance(value, dict):
            fail(where, f"expected an object, got {_kind(value)}")
        for name, shape in required.items():
            if name not in value:
                fail(where or "the file", f"the field {name!r} is missing")
            shape(value[name], _field(where, name))
        for name, shape in optional.items():
            if value.get(name) is not None:
                shape(value[name], _field(where, name))

    return check


def kinds(table: dict, what: str):
    """An object whose ``type`` names an entry of ``table`` (a shape each)."""

    def check(value, where):
        if not isinstance(value, dict):
            fail(where, f"expected a {what} object, got {_kind(value)}")
        kind = value.get("type")
        if not isinstance(kind, str) or kind not in table:
            got = _q(kind) if isinstance(kind, str) else _kind(kind)
            fail(where, f"{what} '{got}' is not supported (supported: {', '.join(table)})")
        table[kind](value, where)

    return check


def sequence_of(field: str, item):
    """A ``Sequence`` entry: ``field`` lists entries of the same family (``item`` is
    looked up late, since the family's table holds this very shape)."""
    return fields({field: lambda v, w: list_of(item(), MAX_STEPS)(v, w)})


# -- the families --------------------------------------------------------------------------

STRING_PATTERN = fields({"String": string(empty=False)})
PREFIX_SCHEME = choice("always", "never", "first")
METASPACE = fields(optional={"replacement": string(chars=1), "prepend_scheme": PREFIX_SCHEME,
                             "add_prefix_space": boolean, "split": boolean})  # fmt: skip


def _string_pattern(what: str):
    """A ``pattern`` holding a ``String`` (a ``Regex`` one is named as unsupported)."""

    def check(value, where):
        if isinstance(value, dict) and "Regex" in value and "String" not in value:
            fail(where, f"a {what} with a regex pattern is not supported")
        STRING_PATTERN(value, where)

    return check


NORMALIZERS: dict = {
    "Replace": fields({"pattern": _string_pattern("Replace normalizer"), "content": string()}),
    "Prepend": fields({"prepend": string()}),
    "Strip": fields(optional={"strip_left": boolean, "strip_right": boolean}),
    "Sequence": sequence_of("normalizers", lambda: NORMALIZER),
    "Lowercase": fields(),
    "BertNormalizer": fields(
        optional={
            "clean_text": boolean,
            "handle_chinese_chars": boolean,
            "lowercase": boolean,
            "strip_accents": boolean,
        }
    ),  # fmt: skip
    **{form: fields() for form in ("NFC", "NFD", "NFKC", "NFKD")},
}
NORMALIZER = kinds(NORMALIZERS, "normalizer")


def _split_pattern(value, where):
    if not isinstance(value, dict) or len(value.keys() & {"String", "Regex"}) != 1:
        fail(where, "expected an object with one of String or Regex")
    if "String" in value:
        string()(value["String"], f"{where}.String")
    else:
        check_regex(value["Regex"], f"{where}.Regex")


BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
PRE_TOKENIZERS: dict = {
    "ByteLevel": fields(optional={"add_prefix_space": boolean, "use_regex": boolean}),
    "Metaspace": METASPACE,
    "WhitespaceSplit": fields(),
    "Split": fields(
        {"pattern": _split_pattern}, {"behavior": choice(*BEHAVIORS), "invert": boolean}
    ),  # fmt: skip
    "BertPreTokenizer": fields(),
    "Sequence": sequence_of("pretokenizers", lambda: PRE_TOKENIZER),
}
PRE_TOKENIZER = kinds(PRE_TOKENIZERS, "pre_tokenizer")

DECODERS: dict = {
    "ByteLevel": fields(),
    "Metaspace": METASPACE,
    "ByteFallback": fields(),
    "Fuse": fields(),
    "Replace": fields({"pattern": _string_pattern("Replace decoder"), "content": string()}),
    "Strip": fields(
        optional={
            "content": string(chars=1),
            "start": integer(0, MAX_REPEAT),
            "stop": integer(0, MAX_REPEAT),
        }
    ),  # fmt: skip
    "WordPiece": fields(optional={"prefix": string(), "cleanup": boolean}),
    "Sequence": sequence_of("decoders", lambda: DECODER),
}
DECODER = kinds(DECODERS, "decoder")


def _template(value, where):
    """TemplateProcessing: each ``single`` item is the text (``Sequence``) or a special
    token named in ``special_tokens``."""
    fields({"single": list_of(_template_item, MAX_STEPS)},
           {"special_tokens": _template_specials})(value, where)  # fmt: skip
    specials = value.get("special_tokens") or {}
    for i, item in enumerate(value["single"]):
        name = item.get("SpecialToken", {}).get("id")
        if name is not None and name not in specials:
            fail(f"{where}.single[{i}]", f"{_q(name)} is not in special_tokens")


_template_item_kinds = {
    "Sequence": fields({"id": choice("A", "B")}),
    "SpecialToken": fields({"id": string()}),
}


def _template_item(value, where):
    if (
        not isinstance(value, dict)
        or len(value) != 1
        or next(iter(value)) not in (_template_item_kinds)
    ):
        fail(where, "expected an object holding one of Sequence or SpecialToken")
    name = next(iter(value))
    _template_item_kinds[name](value[name], f"{where}.{name}")


def _template_specials(value, where):
    if not isinstance(value, dict):
        fail(where, f"expected an object, got {_kind(value)}")
    if len(value) > MAX_STEPS:
        fail(where, f"{len(value)} entries are over the {MAX_STEPS} cap")
    for name, entry in value.items():
        fields({"ids": list_of(TOKEN_ID, MAX_STEPS)})(entry, f"{where}.{_q(name)}")


def _pair(value, where):
    """``[token, id]``, as BertProcessing's ``cls`` and ``sep`` are written."""
    if not isinstance(value, list) or len(value) != 2:
        fail(where, "expected [token, id]")
    string()(value[0], f"{where}[0]")
    TOKEN_ID(value[1], f"{where}[1]")


POST_PROCESSORS: dict = {
    "ByteLevel": fields(),
    "TemplateProcessing": _template,
    "BertProcessing": fields({"cls": _pair, "sep": _pair}),
    "RobertaProcessing": fields({"cls": _pair, "sep": _pair}),
    "Sequence": sequence_of("processors", lambda: POST_PROCESSOR),
}
POST_PROCESSOR = kinds(POST_PROCESSORS, "post_processor")


# -- the model -----------------------------------------------------------------------------


def vocab(value, where):
    """token -> id: ids are integers in range, each held by one token."""
    if not isinstance(value, dict):
        fail(where, f"expected an object of token: id, got {_kind(value)}")
    if len(value) > MAX_ENTRIES:
        fail(where, f"{len(value)} entries are over the {MAX_ENTRIES} cap")
    seen: dict[int, str] = {}
    for token, i in value.items():
        TOKEN_ID(i, f"{where}[{_q(token)}]")
        if i in seen:
            fail(where, f"the id {i} is given to two tokens ({_q(seen[i])} and "
                        f"{_q(token)})")  # fmt: skip
        seen[i] = token


def _merge(value, where):
    """One merge: ``"a b"`` or ``["a", "b"]`` (both forms are written)."""
    if isinstance(value, str):
        if " " not in value.strip(" ") or value.startswith(" "):
            fail(where, f"expected two tokens separated by a space, got {_q(value)}")
    elif isinstance(value, list):
        if len(value) != 2 or not all(isinstance(t, str) and t for t in value):
            fail(where, "expected a pair of two non-empty token strings")
    else:
        fail(where, f'expected "a b" or ["a", "b"], got {_kind(value)}')


MODELS: dict = {
    "BPE": fields(
        optional={
            "vocab": vocab,
            "merges": list_of(_merge, MAX_ENTRIES),
            "unk_token": string(),
            "fuse_unk": boolean,
            "byte_fallback": boolean,
            "continuing_subword_prefix": string(),
            "end_of_word_suffix": string(),
            "ignore_merges": boolean,
            "dropout": number(0.0, 1.0),
        }
    ),
    "WordPiece": fields(
        optional={
            "vocab": vocab,
            "unk_token": string(),
            "continuing_subword_prefix": string(),
            "max_input_chars_per_word": integer(0, MAX_REPEAT),
        }
    ),
}


def _model(value, where):
    if isinstance(value, dict) and "type" not in value and "merges" in value:
        value = {**value, "type": "BPE"}  # older BPE files leave the type out
    kinds(MODELS, "model")(value, where)


ADDED_TOKEN = fields(
    {"id": TOKEN_ID, "content": string(MAX_ADDED_CHARS, empty=False)},
    {name: boolean for name in ("special", "lstrip", "rstrip", "normalized", "single_word")},
)

TOKENIZER = fields(
    {"model": _model},
    {
        "added_tokens": list_of(ADDED_TOKEN, MAX_ADDED),
        "normalizer": NORMALIZER,
        "pre_tokenizer": PRE_TOKENIZER,
        "decoder": DECODER,
        "post_processor": POST_PROCESSOR,
    },
)


def check(spec) -> None:
    """Refuse a tokenizer.json value that is not of a shape the reader supports."""
    if not isinstance(spec, dict):
        fail("the file", f"expected an object, got {_kind(spec)}")
    TOKENIZER(spec, "")


def check_growth(before: int, after: int, what: str) -> None:
    """Refuse a step (a normalizer, a decoder) that makes text far longer than it was: a
    Sequence of replacements could otherwise grow it geometrically."""
    if after > 8 * before + 4096:
        raise ScellisError(
            f"tokenizer.json: the {what} makes a {before}-character text {after} characters "
            "long (more than 8 times longer)"
        )
