"""``scellis share RUN`` (cli layer): a link that reproduces a run in the tab.

The link is the tab's address (``--site``, default where ``scellis serve`` serves it)
with the run's record, dataset hash, seed, tier and first losses in its fragment
(``run.share``); ``scellis reproduce LINK`` opens it here.
"""

from __future__ import annotations

import json

import click

from ..run.share import DEFAULT_SITE, DEFAULT_STEPS, MAX_STEPS, link_of, shared_of
from .runs import open_records


@click.command("share", help="Print a link that reproduces a run (open it in the tab, or "
               "with scellis reproduce).")  # fmt: skip
@click.argument("run", metavar="RUN")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--site", default=DEFAULT_SITE, show_default=True, metavar="URL",
              help="the tab's address the link opens")  # fmt: skip
@click.option(
    "--steps", type=click.IntRange(1, MAX_STEPS), default=DEFAULT_STEPS, show_default=True,
    help="expected losses the link carries, from the first step",
)  # fmt: skip
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
def command(run, store, site, steps, json_):
    open_records(store).close()  # a missing store: said the CLI's way
    shared = shared_of(store, run, steps)
    link = link_of(shared, site)
    if json_:
        print(json.dumps({"run": shared.run, "link": link, "chars": len(link),
                          "steps": len(shared.losses), "dataset": shared.dataset,
                          "tier": shared.tier, "seed": shared.seed}))  # fmt: skip
    else:
        print(link)
    return 0
