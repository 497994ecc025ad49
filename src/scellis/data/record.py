"""A record's ``data`` section to a dataset (data layer): the CSV or text connector it names.

``source`` is a path (relative to the record's folder) or ``bundled:NAME`` for the
examples shipped in the package; ``format`` is ``csv`` or ``text`` (by default from
the file's suffix). CSV keys: ``column`` (one series as feature and target) or
``features`` + ``target``, ``datetime``, ``datetime_format``, ``missing``,
``window`` (input length), ``horizon``, ``stride``, ``val_fraction``, ``normalise``
(``standard`` is ``zscore``; ``window``, ``change`` and ``season`` scale each window
by its own inputs, see ``frames.py``), ``season`` (with ``normalise: season``: the
rows of one cycle), ``delimiter``. Text keys: ``tokenizer`` (``char``, or
the path of a ``tokenizer.json`` or of a folder holding one, relative to the record's
folder), ``context``, ``stride``, ``val_fraction``, ``max_chars``. Either may pin the dataset's
version with ``sha256``: a file (or options) whose digest differs is refused.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from ..base.errors import ScellisError
from .csvsource import CSVConfig, SeriesDataset, load_csv
from .text import TextDataset, TokenizerVocab, read_text, text_dataset
from .tokenizer import load as load_tokenizer

BUNDLED = Path(__file__).resolve().parent / "bundled"
CSV_KEYS = {
    "source", "format", "column", "features", "target", "datetime", "datetime_format",
    "missing", "window", "horizon", "stride", "val_fraction", "normalise", "season", "delimiter",
    "sha256",
    "augment",  # read by the training loop (train/augment.py), not by the reader
}  # fmt: skip
TEXT_KEYS = {
    "source", "format", "tokenizer", "context", "stride", "val_fraction", "max_chars", "sha256",
}  # fmt: skip
_NORMALISE_ALIASES = {"standard": "zscore"}


def source_path(source: str, base_dir=".") -> Path:
    if not isinstance(source, str) or not source:
        raise ScellisError("data.source must name a file (a path or bundled:NAME)")
    if source.startswith("bundled:"):
        name = source.split(":", 1)[1]
        path = BUNDLED / name
        if "/" in name or "\\" in name or not path.is_file():
            have = ", ".join(sorted(p.name for p in BUNDLED.iterdir() if p.suffix != ".md"))
            raise ScellisError(f"data.source: no bundled file {name!r} (bundled: {have})")
        return path
    return Path(base_dir) / source


def _check_keys(data: dict, allowed: set, fmt: str) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ScellisError(f"data.{key}: not a {fmt} data option{hint}")


def csv_config(data: dict, path: Path) -> CSVConfig:
    _check_keys(data, CSV_KEYS, "csv")
    data = {k: v for k, v in data.items() if k != "sha256"}
    if "column" in data:
        if "features" in data or "target" in data:
            raise ScellisError("data: give either column, or features and target, not both")
        features, target = (data["column"],), data["column"]
    else:
        if "features" not in data or "target" not in data:
            raise ScellisError("data: name the series with column, or features and target")
        feats = data["features"]
        features = (feats,) if isinstance(feats, str) else tuple(feats)
        target = data["target"]
    normalise = data.get("normalise", "zscore")
    opts = {
        k: data[k]
        for k in (
            "datetime",
            "datetime_format",
            "missing",
            "horizon",
            "stride",
            "val_fraction",
            "season",
        )
        if k in data
    }
    if "window" in data:
        opts["length"] = data["window"]
    if "delimiter" in data:
        opts["delimiter"] = data["delimiter"]
    normalise = _NORMALISE_ALIASES.get(normalise, normalise)
    return CSVConfig(str(path), features, target, normalise=normalise, **opts)


def load_data(data: dict, base_dir=".") -> SeriesDataset | TextDataset:
    """The dataset a record's ``data`` mapping describes, read, windowed and version-checked."""
    if not isinstance(data, dict):
        raise ScellisError("data must be a mapping")
    ds = _load(data, base_dir)
    want = data.get("sha256")
    if want is not None and want != ds.digest:
        raise ScellisError(
            f"data.sha256: the dataset's version is {ds.digest}, the record pins {want} "
            "(the file or the data options changed)"
        )
    return ds


def data_format(data: dict, path) -> str:
    """The data section's format: as it says, else told by the file's suffix."""
    return data.get("format") or ("csv" if Path(path).suffix.lower() == ".csv" else "text")


def _load(data: dict, base_dir) -> SeriesDataset | TextDataset:
    path = source_path(data.get("source"), base_dir)
    fmt = data_format(data, path)
    if fmt == "csv":
        return load_csv(csv_config(data, path))
    if fmt != "text":
        raise ScellisError(f"data.format must be csv or text, got {fmt!r}")
    _check_keys(data, TEXT_KEYS, "text")
    vocab = tokenizer_vocab(data.get("tokenizer", "char"), base_dir)
    text = read_text(path)
    if "max_chars" in data:
        text = text[: int(data["max_chars"])]
    return text_dataset(
        text, int(data.get("context", 64)), data.get("stride"), data.get("val_fraction", 0.1),
        vocab,
    )  # fmt: skip


def tokenizer_path(name, base_dir=".") -> Path:
    """The tokenizer.json a data section's ``tokenizer`` (not ``char``) names: a file, or
    a folder holding one, relative to ``base_dir``."""
    if not isinstance(name, str) or not name or name == "char":
        raise ScellisError("data.tokenizer: char, or the path of a tokenizer.json")
    path = Path(base_dir) / name
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise ScellisError(
            f"data.tokenizer: {name!r} is neither char nor a tokenizer.json file ({path})"
        )
    return path


def tokenizer_vocab(name, base_dir=".") -> TokenizerVocab | None:
    """None for ``char``; else the tokenizer.json at ``name`` (a file or a folder)."""
    if name == "char":
        return None
    tokenizer = load_tokenizer(tokenizer_path(name, base_dir))  # read once, capped
    return TokenizerVocab(tokenizer, tokenizer.digest)
