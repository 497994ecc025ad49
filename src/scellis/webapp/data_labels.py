"""What the tab calls the data a record trains on (webapp layer).

Charts, metrics, the start strip and the record's own comments name the data: its
target column (the unit of every value and error) and how far apart its rows are
(``data.frequency``: a window of 20 *weeks*). ``labels`` reads them from a data
section and its file; ``follow_comments`` rewrites a record's comments when other data
is pinned, so "20 past years" of the sunspots example reads "20 past weeks" once a
weekly file is pinned; a new window or horizon is followed the same way ("the next
year out" reads "the next 4 weeks out" for a horizon of 4).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..base.errors import ScellisError
from ..data.record import source_path
from ..run.effective import follow_data
from ..sml import parse
from . import dataset_api

_cache: dict[tuple, dict | None] = {}  # (path, mtime, size, datetime) -> frequency


def _frequency(path: Path, datetime: str | None, target: str | None) -> dict | None:
    """The spacing of the file's ``datetime`` column (else the first column other than
    the target that reads as times); cached per file version."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size, datetime, target)
    if key not in _cache:
        info = dataset_api.load_table(path.name, path.read_text(encoding="utf-8"))
        col = datetime or next((c for c in info["datetime"] if c != target), None)
        _cache[key] = info["frequency"].get(col) if col else None
    return _cache[key]


def labels(data: dict) -> dict | None:
    """``{kind, file, own, target, datetime, frequency}`` of a data section (``own``: the
    example's bundled file; ``target``/``frequency`` for a CSV), or None when it names
    no readable file."""
    if not isinstance(data, dict) or not isinstance(data.get("source"), str):
        return None
    try:
        path = source_path(data["source"])
        if not path.is_file():
            return None
        csv = (data.get("format") or ("csv" if path.suffix.lower() == ".csv" else "text")) == "csv"
        out = {"kind": "csv" if csv else "text", "file": path.name,
               "own": data["source"].startswith("bundled:")}  # fmt: skip
        if csv:
            target = data.get("target") or data.get("column")
            out.update(target=target, datetime=data.get("datetime"),
                       frequency=_frequency(path, data.get("datetime"), target))  # fmt: skip
        return out
    except (ScellisError, OSError, UnicodeDecodeError):
        return None


def record_labels(record: str) -> dict | None:
    """``labels`` of the record's data section (None when it does not parse)."""
    try:
        data = parse(record, "model.sml").data.get("data")
    except ScellisError:
        return None
    return labels(data) if isinstance(data, dict) else None


def _words(old: dict, new: dict) -> dict[str, str]:
    """Each word of the old data's names -> the new data's (singular and plural units)."""
    out: dict[str, str] = {}
    if old.get("target") and new.get("target") and old["target"] != new["target"]:
        t = old["target"]
        if t.endswith("s"):  # "sunspots", and "sunspot numbers" in prose
            out[f"{t[:-1]} numbers"] = out[f"{t[:-1]} number"] = new["target"]
        out[t] = new["target"]
    was, now = old.get("frequency"), new.get("frequency")
    if was and was != now:
        unit = now["unit"] if now else "row"
        out[was["name"]] = now["name"] if now else ""
        out[was["unit"] + "s"] = unit + "s"
        out[was["unit"]] = unit
    return out


def _count(n: int, unit: str) -> str:
    return f"one {unit}" if n == 1 else f"{n} {unit}s"


def _next(n: int, unit: str) -> str:
    return f"the next {unit}" if n == 1 else f"the next {n} {unit}s"


def _spans(old: dict, new: dict) -> dict[str, str]:
    """The phrases that count the old window and horizon -> the new ones, in each data's
    unit of time ("20 past years" -> "24 past weeks", "one year ahead" -> "4 weeks
    ahead"); none for a count the data section does not give."""
    out: dict[str, str] = {}
    units = [(d.get("frequency") or {}).get("unit", "row") for d in (old, new)]
    w, h = (old.get("window"), new.get("window")), (old.get("horizon"), new.get("horizon"))
    if all(isinstance(v, int) for v in w):
        out[f"{w[0]} past {units[0]}s"] = f"{w[1]} past {units[1]}s"
        out[f"{w[0]} steps"] = f"{w[1]} steps"
    if all(isinstance(v, int) for v in h):
        out[_count(h[0], units[0]) + " ahead"] = _count(h[1], units[1]) + " ahead"
        out[_next(h[0], units[0])] = _next(h[1], units[1])
    return {k: v for k, v in out.items() if k != v}


def with_counts(labels: dict | None, data: dict | None) -> dict | None:
    """``labels`` with the data section's window and horizon, for ``follow_comments``."""
    if not labels or not isinstance(data, dict):
        return labels
    return {**labels, "window": data.get("window"), "horizon": data.get("horizon")}


def follow_comments(
    text: str, old: dict | None, new: dict | None, only: set[str] | None = None
) -> str:
    """``text`` with the comments that name ``old``'s data (its target, its unit of time,
    its window and horizon: see ``with_counts``) naming ``new``'s instead; the SML itself
    is left as it is. With ``only``, a comment is followed only when it is one of those
    (the others are the user's own words, written with the edit)."""
    if not old or not new or old.get("kind") != "csv" or new.get("kind") != "csv":
        return text
    words = {**_words(old, new), **_spans(old, new)}
    if not words:
        return text
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    word = re.compile(rf"\b({alternatives})\b( ?)")

    def swap(m: re.Match) -> str:  # a dropped adjective takes its space along
        got = words[m.group(1)]
        return got + m.group(2) if got else ""

    lines = []
    for line in text.split("\n"):
        hash_at = re.search(r"(^|\s)#", line)
        if hash_at and (only is None or line[hash_at.end() :] in only):
            cut = hash_at.end()
            line = line[:cut] + word.sub(swap, line[cut:])
        lines.append(line)
    return "\n".join(lines)


def _comments(text: str) -> set[str]:
    """Each line's comment (what follows its ``#``), as ``follow_comments`` cuts it."""
    out = set()
    for line in text.split("\n"):
        hash_at = re.search(r"(^|\s)#", line)
        if hash_at:
            out.add(line[hash_at.end() :])
    return out


def _counted(text: str) -> dict | None:
    return with_counts(record_labels(text), dataset_api.data_section(text))


def follow_edit(before: str, text: str) -> dict:
    """After an edit of the record's data section in Model View (``before`` -> ``text``):
    the record that follows it, as a data-panel change does. A new window or horizon
    carries the inputs and the output head with it (``run.effective.follow_data``), and
    the comments that counted or named the old data name the new (``follow_comments``),
    save those the edit itself wrote or changed (the user's own words). Returns ``{text,
    settled}``: ``settled`` when the new window and horizon are whole numbers, so the
    next edit is followed from this text (a half-typed count is followed from ``before``)."""
    try:
        doc = parse(text, "model.sml")
    except ScellisError:
        return {"text": text, "settled": False}
    data = doc.data.get("data")
    counts = [data.get(k, 1) for k in ("window", "horizon")] if isinstance(data, dict) else []
    settled = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in counts)
    if not settled:
        return {"text": text, "settled": False}
    old = dataset_api.data_section(before)
    follow_data(doc, old)
    dataset_api.rehash(doc)  # the data options are part of a pinned file's version
    out = follow_comments(doc.text, _counted(before), _counted(text), only=_comments(before))
    return {"text": out, "settled": True}
