"""``scellis`` entry point (cli layer): sub-commands, one clear line and exit 2 on bad input."""

from __future__ import annotations

import argparse
import sys

from .. import ScellisError, __version__
from . import catalog, demo, devices, train, validate


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scellis", description="Train neural networks on your GPU.")
    p.add_argument("--version", action="version", version=f"scellis {__version__}")
    sub = p.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="train the LSTM forecaster on the bundled sunspot series")
    d.add_argument("--device", default="auto", help="auto | reference | webgpu")
    d.add_argument("--epochs", type=int, default=40)
    d.add_argument("--seed", type=int, default=0)
    d.set_defaults(func=demo.run)
    v = sub.add_parser("devices", help="list WebGPU adapters, their limits and features")
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.set_defaults(func=devices.run)
    catalog.add_parser(sub)
    validate.add_parser(sub)
    t = sub.add_parser("train", help="train the pipeline an SML record carries")
    t.add_argument("file", help="an .sml record")
    t.add_argument("--device", default="auto", help="auto | reference | webgpu")
    t.add_argument("--epochs", type=int, default=None, help="override the record's epochs")
    t.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
    t.add_argument("--log-every", type=int, default=20, help="steps between log lines")
    t.add_argument("--json", action="store_true", help="one JSON object per event")
    t.set_defaults(func=train.run)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse prints its own message; usage errors are exit 2
        return int(e.code or 0)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except ScellisError as e:
        print(f"scellis: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scellis: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
