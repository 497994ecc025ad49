"""Shared CLI helpers (cli layer): ``--extensions``, and the device for ``--device auto``."""

from __future__ import annotations

import click

import scellis as sc

from ..catalog.extensions import load_extensions

extensions_option = click.option(
    "--extensions",
    multiple=True,
    metavar="PATH",
    help="load user catalog entries first: a folder or .py file, or a dotted module "
    "(repeatable). A record file you run loads its own extensions: section too; a record "
    "that comes inside a run, checkpoint, bundle or import never runs code by itself",
)


def load_cli_extensions(paths) -> None:
    """Load what ``--extensions`` named (paths relative to the working folder)."""
    if paths:
        load_extensions(list(paths))


def pick_device(name: str) -> tuple[str, str]:
    """The device to use and why: auto takes WebGPU on a real GPU; a software adapter
    (lavapipe) runs the same kernels, but the NumPy reference is faster on the CPU."""
    if name != "auto":
        return name, ""
    try:
        adapters = sc.list_adapters()
    except sc.ScellisError as e:
        return "reference", f"auto: no WebGPU ({e})"
    hardware = [a for a in adapters if a["adapter_type"] not in ("CPU", "cpu")]
    if hardware:
        return "webgpu", f"auto: {hardware[0]['name']}"
    if adapters:
        return "reference", (
            f"auto: only a software adapter ({adapters[0]['name']}); "
            "--device webgpu runs the WGSL kernels on it"
        )
    return "reference", "auto: no WebGPU adapter"
