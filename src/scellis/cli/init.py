"""``scellis init [FILE]`` (cli layer): write a commented starter SML record.

The starter validates and trains as written (on a bundled dataset), so a new user goes
from nothing to a running experiment in two commands. With ``--data FILE`` (a CSV) the
forecaster's data section is written for that file instead: the value column, the
dates, a window and the normalisation chosen from the series (``data.advice``), each
with its reason as a comment, and the inputs, the epochs (a short series gets more, a
long one fewer), the schedule and the validation spacing (once an epoch) sized to
match. An existing file is never overwritten unless ``--force`` says so.
"""

from __future__ import annotations

import json
import math
import os
import re
import textwrap
from importlib import resources
from pathlib import Path

import click

from ..base.errors import ScellisError
from ..base.files import check_output, write_file
from ..data.advice import advise

TEMPLATES = {"forecaster": "forecaster.sml", "char-lm": "char_lm.sml"}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def starter_text(template: str, namespace: str, name: str, file: str) -> str:
    """The starter record for ``template`` with its id and file name filled in."""
    if template not in TEMPLATES:
        raise ScellisError(f"unknown template {template!r}; choose one of {sorted(TEMPLATES)}")
    for what, v in (("namespace", namespace), ("name", name)):
        parts = v.split("/") if what == "namespace" else [v]
        if not all(_NAME.match(p) for p in parts):
            raise ScellisError(
                f"{what} {v!r} must be lower-case letters, digits and '_' (starting with a "
                "letter), e.g. 'user/ada' and 'my_model'"
            )
    text = resources.files(__package__).joinpath("templates", TEMPLATES[template]).read_text()
    return text.replace("{namespace}", namespace).replace("{name}", name).replace("{file}", file)


MIN_STEPS = 300  # updates a forecaster of the starter's size needs on a short series
# and the most a long series gets: past a thousand updates the starter's 32 units have
# learned what they can, while each epoch of a long series costs as many updates as a
# short one's whole run (NeuralForecast likewise trains a fixed 1,000 steps by default,
# whatever the series' length)
MAX_STEPS = 1000
_DATA_SECTION = re.compile(r"^# -- what it trains on.*?(?=^eval:)", re.M | re.S)


def fitted_text(text: str, data_file: str, record_file: str, column=None, horizon=1) -> tuple:
    """The forecaster starter ``text`` with its data section written for ``data_file``
    (see the module note); also the advice it followed."""
    got = advise(data_file, column, horizon)
    data, why = got["data"], got["why"]
    source = os.path.relpath(Path(data_file).resolve(), Path(record_file).resolve().parent)
    lines = [
        "# -- what it trains on: chosen from the data by `scellis init --data` ------------",
        "data:",
        f"  source: {json.dumps(Path(source).as_posix())}",
        "  format: csv",
    ]
    for key, value in data.items():
        item = f"  {key}: {json.dumps(value) if isinstance(value, str) else value}"
        notes = textwrap.wrap(why.get(key, ""), 60) or [""]
        lines.append(f"{item:28}# {notes[0]}" if notes[0] else item)
        lines += [f"{'':28}# {n}" for n in notes[1:]]
    text = _DATA_SECTION.sub("\n".join(lines) + "\n\n", text)
    window, train_rows = data["window"], got["rows"] - math.ceil(got["rows"] * 0.2)
    text = text.replace("shape: [batch, 24, 1]", f"shape: [batch, {window}, 1]")
    text = text.replace(
        "n_outputs: 1            # predict one step ahead",
        f"n_outputs: {horizon}            # one per step of data.horizon",
    )
    windows = max(train_rows - window - horizon + 1, 1)
    batches = math.ceil(windows / 32)
    # a short series has few batches an epoch: enough epochs for MIN_STEPS updates
    epochs = min(max(20, math.ceil(MIN_STEPS / batches)), 500)
    epochs = min(epochs, max(MAX_STEPS // batches, 1))
    text = text.replace("epochs: 20\n", f"epochs: {epochs:<18}# {epochs * batches} steps over "
                        f"{windows} training windows\n")  # fmt: skip
    text = text.replace("t_max: 140", f"t_max: {epochs * batches}")
    # a validation pass over a long series' validation fifth costs many training steps:
    # once an epoch (as Keras and Lightning validate), not after every step; the run's
    # last state is validated whatever the spacing, so its verdict is the same
    every = f"eval: {{ every: {batches}, batch_size: 64, metrics: [mae] }}"
    text = text.replace("eval: { every: 1, batch_size: 64, metrics: [mae] }",
                        f"{every:52}# once an epoch")  # fmt: skip
    return text, got


def run(file: str, template: str, namespace: str, force: bool, as_json: bool,
        data: str | None = None, column: str | None = None, horizon: int = 1) -> int:  # fmt: skip
    path = Path(file)
    check_output(path, replace=force)  # an earlier file, a link, a folder, a FIFO: refused
    if data is not None and template != "forecaster":
        raise ScellisError("--data writes a forecaster's data section; use --template forecaster")
    if horizon < 1:
        raise ScellisError(f"--horizon must be 1 or more, got {horizon}")
    name = re.sub(r"[^a-z0-9_]", "_", path.stem.lower()) or "model"
    if not name[0].isalpha():
        name = "m_" + name
    text = starter_text(template, namespace, name, file)
    advice = None
    if data is not None:
        text, advice = fitted_text(text, data, file, column, horizon)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, text.encode(), replace=force)
    except OSError as e:
        raise ScellisError(f"cannot write {file}: {e.strerror or e}") from None
    model_id = f"{namespace}/{name}@1"
    if as_json:
        extra = {"data": advice["data"], "why": advice["why"]} if advice else {}
        print(json.dumps({"file": file, "model": model_id, "template": template, **extra}))
    else:
        print(f"wrote {file} ({model_id}, template {template})")
        if advice:
            d = advice["data"]
            print(f"  data: {d['column']} of {data}, window {d['window']}, "
                  f"normalise {d['normalise']}: {advice['why']['normalise']}")  # fmt: skip
        print(f"next: scellis validate {file} && scellis train {file}")
    return 0


@click.command("init", help="Write a commented starter SML record (default: model.sml).")
@click.argument("file", default="model.sml", metavar="[FILE]")
@click.option(
    "--template",
    type=click.Choice(sorted(TEMPLATES)),
    default="forecaster",
    show_default=True,
    help="an LSTM forecaster on a series, or a char Transformer language model",
)
@click.option("--namespace", default="user/me", show_default=True, help="the model id's namespace")
@click.option("--force", is_flag=True, help="overwrite FILE if it exists")
@click.option("--data", "data", default=None, type=click.Path(dir_okay=False),
              help="a CSV series: the data section is chosen from it")  # fmt: skip
@click.option("--column", default=None, help="with --data: the value column (default: the first)")
@click.option("--horizon", default=1, show_default=True, type=int,
              help="with --data: the steps each forecast predicts")  # fmt: skip
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
def command(file, template, namespace, force, data, column, horizon, json_):
    return run(file, template, namespace, force, json_, data, column, horizon)
