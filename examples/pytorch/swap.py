"""The one switch of the PyTorch-style examples: which library runs them.

``python examples/pytorch/<script>.py`` runs a script with Scellis; ``--torch`` runs the
very same code with PyTorch. Nothing else in a script knows which library it has:
``lib`` stands where ``torch`` stands in a torch script, ``data`` for
``torch.utils.data``. ``--device`` picks Scellis' device (reference, webgpu);
``--epochs`` shortens a run.
"""

from __future__ import annotations

import argparse
import json


def library(argv=None):
    """(lib, data, device, epochs) from the command line."""
    p = argparse.ArgumentParser()
    p.add_argument("--torch", action="store_true", help="run with PyTorch instead")
    p.add_argument("--device", default=None, help="Scellis' device: reference or webgpu")
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args(argv)
    if a.torch:
        import torch as lib
        import torch.utils.data as data

        return lib, data, "cpu", a.epochs
    import scellis as lib
    import scellis.data as data

    return lib, data, a.device or "reference", a.epochs


def report(losses) -> None:
    print(json.dumps({"losses": losses}))
