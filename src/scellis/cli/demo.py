"""``scellis demo`` (cli layer): train the LSTM forecaster on the bundled sunspot series.

Prints the loss as it falls and, at the end, the validation MAE next to the
persistence forecast's; exits 0 only when the model beats persistence.
"""

from __future__ import annotations

from types import SimpleNamespace

import click

import scellis as sc
from scellis.train.recipes import forecast

from .common import pick_device


def run(args) -> int:
    device, why = pick_device(args.device)
    print(
        f"scellis demo: LSTM forecaster on yearly sunspots (1700-2008), device={device}"
        + (f" ({why})" if why else "")
    )

    def show(ev):
        if ev["kind"] == "log":
            print(
                f"  step {ev['step']:4d}  epoch {ev['epoch']:3d}  loss {ev['loss']:.4f}  "
                f"lr {ev['lr']:.4g}  {ev['throughput']:.0f} samples/s"
            )
        elif ev["kind"] == "eval" and ev["epoch"] % 10 == 0:
            print(f"  eval at epoch {ev['epoch']:3d}  val_loss {ev['val_loss']:.4f}")

    r = forecast(device, epochs=args.epochs, seed=args.seed, on_event=show)
    print(
        f"done in {r['seconds']:.1f}s, {r['steps']} steps: validation MAE {r['val_mae']:.2f} "
        f"vs persistence {r['persistence_mae']:.2f} (dataset sha256 {r['dataset_sha256'][:12]})"
    )
    if device == "webgpu":
        st = sc.devices.get_device("webgpu").stats
        print(
            f"webgpu: {st['pipelines']} pipelines compiled in {st['compile_s']:.2f}s, "
            f"first result after {st.get('first_result_s', float('nan')):.2f}s, "
            f"{st['dispatches']} dispatches"
        )
    if not r["val_mae"] < r["persistence_mae"]:
        print("scellis demo: the model did not beat persistence; something is wrong")
        return 1
    return 0


@click.command("demo", help="Train the LSTM forecaster on the bundled sunspot series.")
@click.option("--device", default="auto", show_default=True, help="auto | reference | webgpu")
@click.option("--epochs", type=int, default=40, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def command(device, epochs, seed):
    return run(SimpleNamespace(device=device, epochs=epochs, seed=seed))
