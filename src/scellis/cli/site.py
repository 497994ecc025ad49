"""``scellis site build --out DIR`` (cli layer): build the static site for the browser tab.

The site is plain files: Pyodide, the scellis and dependency wheels, the bundled front
end and a precaching service worker (see ``site_build``). Serve it from any static
server on https or localhost, or with ``scellis serve``.
"""

from __future__ import annotations

import json

import click

from .site_build import build_site


@click.group("site", help="Build the static site of the browser app.")
def command() -> None:
    pass


@command.command("build", help="Build the site into DIR (emptied first).")
@click.option("--out", "out", required=True, metavar="DIR", help="where the site goes")
@click.option("--json", "json_", is_flag=True, help="print what was built as JSON")
@click.option("--extra-package", "extra", multiple=True, metavar="DIR",
              help="a pure-Python package folder the tab also imports at boot (its "
                   "worker commands: the benchmark hooks of bench/tab/tabbench)")  # fmt: skip
def build(out, json_, extra):
    info = build_site(out, extra_packages=list(extra))
    if json_:
        print(json.dumps(info))
    else:
        print(
            f"site built in {info['out']}: {info['bytes'] / 2**20:.1f} MiB, "
            f"wheels {', '.join(info['wheels'])}, cache {info['cache']}"
        )
    return 0
