"""A run's metrics as TensorBoard event files (run layer), through the tensorboard package.

``write_events(series, folder)`` writes one ``events.out.tfevents.*`` file holding every
recorded value as a scalar (tag: the metric's name, step: the training step), so
``tensorboard --logdir FOLDER`` shows the run's curves. The package is optional (the
``tensorboard`` extra); without it the caller is told which extra to install.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..base.errors import ScellisError
from ..base.files import check_destination

INSTALL = "pip install 'scellis[tensorboard]'"


def _writer_parts():
    try:
        from tensorboard.compat.proto.event_pb2 import Event  # noqa: PLC0415
        from tensorboard.compat.proto.summary_pb2 import Summary  # noqa: PLC0415
        from tensorboard.summary.writer.event_file_writer import (  # noqa: PLC0415
            EventFileWriter,
        )
    except ImportError:
        raise ScellisError(
            f"TensorBoard event files need the tensorboard package: {INSTALL}"
        ) from None
    return Event, Summary, EventFileWriter


def write_events(series: dict[str, list], folder, run: str = "") -> int:
    """``{name: [(step, value)]}`` into a new event file in ``folder`` (created); how
    many values it holds. Values that are None (not recorded at that step) are left out."""
    Event, Summary, EventFileWriter = _writer_parts()
    out = Path(folder)
    check_destination(out, replace=True, folder=True)  # a real folder or a new one, no link
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ScellisError(f"{out}: cannot make the folder ({e.strerror or e})") from None
    if not out.is_dir():
        raise ScellisError(f"{out}: not a folder")
    writer = EventFileWriter(str(out), filename_suffix=f".{run}" if run else "")
    now = time.time()
    rows = sorted((s, n, v) for n, pts in series.items() for s, v in pts if v is not None)
    for step, name, value in rows:
        summary = Summary(value=[Summary.Value(tag=name, simple_value=float(value))])
        writer.add_event(Event(wall_time=now, step=int(step), summary=summary))
    writer.close()
    return len(rows)
