"""``scellis compare RUN RUN`` (cli layer): two runs side by side.

What differs in their configuration (run fields, the way they were driven, and a diff
of the two records' text), their metrics side by side at sampled steps, and both loss
curves as a small terminal plot; ``--png FILE`` exports the plot when matplotlib is
installed (and says so when it is not).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import click

from ..base.files import check_output
from ..run.past import comparison
from .plot import curves, write_png
from .run_text import baseline_text
from .runs import open_records, summary


def _sample(steps: list[int], n: int = 10) -> list[int]:
    if len(steps) <= n:
        return steps
    return sorted({steps[round(i * (len(steps) - 1) / (n - 1))] for i in range(n)})


def gather(store: str, refs: tuple[str, str]) -> dict:
    open_records(store).close()  # a missing store or file: said the CLI's way
    return comparison(store, refs, described=lambda rec, row: summary(rec, row, Path(store)))


def run(store, refs, png, json_, force: bool = False) -> int:
    if png is not None:
        check_output(png, replace=force)  # a folder, a FIFO, a link or an earlier PNG: before work
    g = gather(store, refs)
    a, b = g["runs"]
    la, lb = (dict(m["loss"]) for m in g["metrics"])
    steps = _sample(sorted(set(la) | set(lb)))
    if json_:
        print(json.dumps({
            "runs": [a["id"], b["id"]], "differs": g["differs"], "plan": g["plan"],
            "record_diff": g["record_diff"],
            "loss": [[s, la.get(s), lb.get(s)] for s in sorted(set(la) | set(lb))],
            "final": [{k: r[k] for k in ("loss", "best_loss", "val_loss", "step", "metrics")}
                      for r in (a, b)],
            "baselines": [a["baselines"], b["baselines"]],
        }, indent=2))  # fmt: skip
    else:
        print(f"a = {a['id']}  ({a['model_id']}, {a['device']}, {a['status']})")
        print(f"b = {b['id']}  ({b['model_id']}, {b['device']}, {b['status']})")
        if not (g["differs"] or g["plan"] or g["record_diff"]):
            print("configuration: identical (same record, data, device, tier, seed and plan)")
        for k, (x, y) in {**g["differs"], **g["plan"]}.items():
            print(f"  {k:16} a: {x}\n  {'':16} b: {y}")
        if g["record_diff"]:
            print("record:")
            for line in g["record_diff"]:
                print("  " + line)
        print(f"\n{'step':>9} {'loss a':>10} {'loss b':>10} {'b - a':>10}")
        for s in steps:
            x, y = la.get(s), lb.get(s)
            d = f"{y - x:+10.4f}" if x is not None and y is not None else f"{'-':>10}"
            print(f"{s:>9} {_n(x)} {_n(y)} {d}")
        for name in ("loss", "best_loss", "val_loss"):
            print(f"{name:>9} {_n(a[name])} {_n(b[name])}")
        for name in sorted(set(a["metrics"]) | set(b["metrics"])):  # the record's eval.metrics
            x, y = a["metrics"].get(name), b["metrics"].get(name)
            print(f"{name:>9} {_n(x)} {_n(y)}{_baselines(a, b, name)}")
        print("\nloss (a, b; * both)")
        print(curves([g["metrics"][0]["loss"], g["metrics"][1]["loss"]]))
    if png:
        return _png(png, g, force)
    return 0


def _baselines(a: dict, b: dict, name: str) -> str:
    """The baselines of ``name`` once when both runs have the same, else each run's: on
    other data they differ, and each value is only comparable with its own."""
    one, two = (baseline_text(run["baselines"], name) for run in (a, b))
    if one == two:
        return one
    each = [f"{tag}: {text[2:-1]}" for tag, text in (("a", one), ("b", two)) if text]
    return f" ({'; '.join(each)})"


def _n(v) -> str:
    return f"{'-':>10}" if v is None else f"{v:10.4f}"


def _png(path: str, g: dict, force: bool) -> int:
    if importlib.util.find_spec("matplotlib") is None:
        print("scellis compare: matplotlib is not installed, so no PNG was written "
              "(pip install 'scellis[plot]'); the terminal plot above has the curves")  # fmt: skip
        return 2
    import matplotlib  # optional: only --png needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for r, m in zip(g["runs"], g["metrics"]):
        ax.plot([s for s, _ in m["loss"]], [v for _, v in m["loss"]], label=f"{r['id']} loss")
        if m["val_loss"]:
            ax.plot([s for s, _ in m["val_loss"]], [v for _, v in m["val_loss"]], "--",
                    label=f"{r['id']} val_loss")  # fmt: skip
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend()
    write_png(fig, path, replace=force, dpi=100)
    print(f"wrote {path}")
    return 0


@click.command("compare", help="Two runs side by side: what differs, metrics, loss curves.")
@click.argument("run_a", metavar="RUN")
@click.argument("run_b", metavar="RUN")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--png", default=None, metavar="FILE", help="also plot the curves to a PNG")
@click.option("--force", is_flag=True, help="replace an existing --png file")
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
def command(run_a, run_b, store, png, force, json_):
    return run(store, (run_a, run_b), png, json_, force)
