"""``scellis init [FILE]`` (cli layer): write a commented starter SML record.

The starter validates and trains as written (on a bundled dataset), so a new user goes
from nothing to a running experiment in two commands. An existing file is never
overwritten unless ``--force`` says so.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import click

from ..base.errors import ScellisError
from ..base.files import check_output, write_file

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


def run(file: str, template: str, namespace: str, force: bool, as_json: bool) -> int:
    path = Path(file)
    check_output(path, replace=force)  # an earlier file, a link, a folder, a FIFO: refused
    name = re.sub(r"[^a-z0-9_]", "_", path.stem.lower()) or "model"
    if not name[0].isalpha():
        name = "m_" + name
    text = starter_text(template, namespace, name, file)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, text.encode(), replace=force)
    except OSError as e:
        raise ScellisError(f"cannot write {file}: {e.strerror or e}") from None
    model_id = f"{namespace}/{name}@1"
    if as_json:
        print(json.dumps({"file": file, "model": model_id, "template": template}))
    else:
        print(f"wrote {file} ({model_id}, template {template})")
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
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
def command(file, template, namespace, force, json_):
    return run(file, template, namespace, force, json_)
