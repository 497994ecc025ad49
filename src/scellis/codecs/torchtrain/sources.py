"""The package's copied modules (codecs layer): Scellis' own code, written out as text.

A torch-train package must read its data, order its batches and update its weights
exactly as Scellis does, without importing Scellis. So its ``pipeline.py`` (the CSV and
text connectors, splits, normalisation, windows, the char vocabulary, Philox4x32 and
the shuffled order) and the scalar half of ``optim.py`` (each update's host scalars,
the state buffers it keeps, the schedules) are the project's functions themselves,
copied by ``inspect.getsource`` at export time: one implementation, two homes.
"""

from __future__ import annotations

import inspect
import pprint
import re
import textwrap

from ...base import files, rng
from ...catalog.sched import base as sched_base
from ...catalog.sched import one_cycle, plateau, schedules
from ...data import bounds, csvsource, frames, record, shuffle, table, text
from ...ops import optim as optim_ops
from ...ops import optim_adaptive


def _src(*objs) -> str:
    return "\n\n".join(textwrap.dedent(inspect.getsource(o)).rstrip() for o in objs)


def _const(module, *names: str) -> str:
    return "\n".join(f"{n} = {pprint.pformat(getattr(module, n), width=90)}" for n in names)


def _assignment(module, name: str) -> str:
    """A module-level ``name = (...)`` as written (for values that hold functions)."""
    m = re.search(rf"^{name} = \(.*?^\)$", inspect.getsource(module), re.M | re.S)
    return m.group(0)


PIPELINE_HEAD = '''"""The data pipeline and batch order, copied from Scellis by `scellis export`.

Philox4x32 (the ``shuffle`` stream orders each epoch's rows), the CSV connector (columns,
missing values, the chronological split, normalisation fitted on the training rows,
windows of ``window`` inputs and ``horizon`` targets every ``stride`` rows) and the text
connector (a char vocabulary, next-character windows). Plain Python, no torch.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import hashlib
import io
import json
import math
import os
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


class ScellisError(Exception):
    """A data problem; the message says where (file:line)."""


def load_tokenizer(path):
    raise ScellisError(f"{path}: this package tokenizes text by character only")


BUNDLED = Path(__file__).resolve().parent / "data"
Words4 = tuple
'''


def pipeline_source() -> str:
    """``pipeline.py``: Philox, the shuffled order and both data connectors."""
    parts = [
        PIPELINE_HEAD,
        _const(rng, "MASK32", "PHILOX_M0", "PHILOX_M1", "PHILOX_W0", "PHILOX_W1"),
        _src(rng._mulhilo, rng.philox4x32, rng.stream_key, rng.counter_words, rng.raw_u32),
        _src(shuffle.shuffled_order),
        _const(table, "MISSING"),
        _assignment(files, "_KINDS"),
        _src(files.read_file),
        _const(bounds, "MAX_WINDOW_VALUES", "MAX_GROWTH"),
        _src(bounds.window_count, bounds.check_window_values),
        _src(text.read_text, table.Table, table.parse_time, table._number, table._header),
        _src(table.read_table, table._time),
        _const(csvsource, "MISSING_POLICIES", "NORMALISERS"),
        _const(frames, "WINDOW_NORMALISERS"),
        _const(frames, "NORMAL_MAD"),
        _src(frames.spread_floor, frames.column_frame, frames.season_frame, frames.frame_shift),
        _src(frames.framed_window),
        _src(csvsource.CSVConfig, csvsource.SeriesDataset, csvsource.canonical_text),
        _src(csvsource.dataset_digest, csvsource.split_point, csvsource.fill_missing),
        _src(csvsource.fit_stats, csvsource.windows, csvsource.load_csv),
        _src(text.CharVocab, text.TokenizerVocab, text.TextDataset, text.next_char_windows),
        _src(text.universal_newlines, text.text_dataset),
        _const(record, "CSV_KEYS", "TEXT_KEYS", "_NORMALISE_ALIASES"),
        _src(record.source_path, record._check_keys, record.csv_config, record.load_data),
        _src(record.data_format, record._load, record.tokenizer_path, record.tokenizer_vocab),
    ]
    return "\n\n\n".join(p.strip("\n") for p in parts) + "\n"


_CONFIG_LINE = re.compile(r"^    config = \w+Config\n", re.M)


def _scheduler(cls) -> str:
    """A scheduler class without its Config attribute (the package passes its values)."""
    return _CONFIG_LINE.sub("", textwrap.dedent(inspect.getsource(cls)))


def optim_scalars_source() -> str:
    """The update ops' host scalars and state names, and the step schedules."""
    parts = [
        _src(optim_ops.state_names, optim_ops._sign, optim_ops._sgd, optim_ops._adam),
        _src(optim_ops._rmsprop, optim_ops._lion),
        # Adagrad, NAdam and RAdam's scalars, which _SCALARS names too
        _src(optim_adaptive._weight_decay, optim_adaptive.adagrad_scalars, optim_adaptive._f32),
        _const(optim_adaptive, "_MU_CURSORS"),
        _src(optim_adaptive.mu_product, optim_adaptive._mu, optim_adaptive.nadam_scalars),
        _src(optim_adaptive.radam_scalars),
        "_SCALARS = {\n"
        + "".join(f"    {k!r}: {f.__name__},\n" for k, f in optim_ops._SCALARS.items())
        + "}",
        _src(optim_ops.scalars),
        _scheduler(sched_base.Scheduler),
        _src(schedules.Constant, schedules.Step, schedules.Exponential, schedules.Cosine),
        _src(schedules.LinearWarmup, schedules.WarmupCosine),
        _src(one_cycle._cos, one_cycle._linear),
        _scheduler(one_cycle.OneCycle),
        _scheduler(plateau.ReduceOnPlateau),
    ]
    text_ = "\n\n\n".join(p.strip("\n") for p in parts)
    return _CONFIG_LINE.sub("", text_) + "\n"


SCHEDULER_CLASSES = {
    "constant": "Constant",
    "step": "Step",
    "exponential": "Exponential",
    "cosine": "Cosine",
    "linear_warmup": "LinearWarmup",
    "warmup_cosine": "WarmupCosine",
    "one_cycle": "OneCycle",
    "reduce_on_plateau": "ReduceOnPlateau",
}
