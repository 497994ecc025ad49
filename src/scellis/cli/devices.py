"""``scellis devices`` (cli layer): list WebGPU adapters with limits and features."""

from __future__ import annotations

import json
from types import SimpleNamespace

import click

import scellis as sc

_SHOWN_LIMITS = (
    "max_storage_buffer_binding_size",
    "max_buffer_size",
    "max_compute_workgroup_storage_size",
    "max_compute_invocations_per_workgroup",
    "max_compute_workgroups_per_dimension",
    "max_storage_buffers_per_shader_stage",
)


def run(args) -> int:
    adapters = sc.list_adapters()
    if args.json:
        print(json.dumps(adapters, indent=2))
        return 0
    if not adapters:
        print("no WebGPU adapters found (install a GPU driver or mesa-vulkan-drivers)")
        return 0
    for i, a in enumerate(adapters):
        print(f"[{i}] {a['name']}  ({a['backend']}, {a['adapter_type']}, {a['vendor'] or '-'})")
        print(
            f"    shader-f16: {'yes' if a['shader_f16'] else 'no'}   "
            f"subgroups: {'yes' if a['subgroups'] else 'no'}"
        )
        for k in _SHOWN_LIMITS:
            if k in a["limits"]:
                print(f"    {k}: {a['limits'][k]:,}")
    print("pick one with SCELLIS_ADAPTER=<part of its name or backend>")
    return 0


@click.command("devices", help="List WebGPU adapters, their limits and features.")
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
def command(json_):
    return run(SimpleNamespace(json=json_))
