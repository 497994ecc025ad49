"""Memory traffic of one training step, f32 beside mixed_f16, from the recorded schedule.

No GPU is needed: the step is traced on the recording null device (as ``scellis plan``
does), lowered to kernels and scheduled (``ir/schedule.py``), and each dispatch's operands
are summed. Two figures per step:

  bound   the sizes of the buffers each dispatch binds, summed over dispatches (an upper
          bound: a view of a larger buffer counts the whole buffer, e.g. one parameter of
          the flat parameter buffer, and a recurrent kernel launched once per time step
          counts its whole sequence every launch);
  touched each kernel's operand views, their extent in bytes (first to last element
          addressed), once per kernel: what the kernels read and write when every
          element is touched once; closer to the real traffic.

Both count an f16 element as 2 bytes and an f32 one as 4. ``cast`` dispatches are listed
apart: each is a whole pass over its input and a dispatch, the price of moving between
the f32 master weights and the f16 working copies.

    PYTHONPATH=src python3 bench/traffic.py        # bench/records/{tf_d384,lstm2x256}.sml
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from scellis.devices.webgpu.backend import storage_bytes  # noqa: E402
from scellis.ir.graph import op_graph  # noqa: E402
from scellis.ir.kernels import lower  # noqa: E402
from scellis.ir.limits import PROFILES, resolve  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402
from scellis.ir.schedule import schedule  # noqa: E402
from scellis.ir.trace import trace  # noqa: E402

RECORDS = ("bench/records/tf_d384.sml", "bench/records/lstm2x256.sml")
MiB = 2**20


def step_schedule(record: dict, precision: str, target):
    """The schedule of one training step of ``record`` under ``precision``."""
    tr = trace(record, mode="training", precision=precision, supports_f16=target.has_f16)
    return schedule(lower(op_graph(tr), target))


def extent_bytes(ref, numel: int) -> int:
    """Bytes from a view's first element to its last (capped at its buffer's size)."""
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(ref.shape, ref.strides) if s > 0)
    if any(s == 0 for s in ref.shape):
        span = 0
    return storage_bytes(min(span, numel), ref.dtype)


def kernel_touched(kernel, buffers) -> int:
    """A kernel's operand views, summed once each; values made and used inside a fused
    kernel are not operands (its ``ins`` and ``out`` are)."""
    if kernel.fused:
        refs = [*kernel.ins, kernel.out]
    else:
        refs = [r for n in kernel.ops for r in (*n.ins, *n.outs)]
    seen = {(r.buf, r.shape, r.strides, r.offset): r for r in refs}
    return sum(extent_bytes(r, buffers[r.buf].numel) for r in seen.values())


def traffic(sc) -> dict:
    """Per step: dispatches, bound and touched bytes, and both per op (the kernel's first)."""
    kg = sc.kernels
    buffers = kg.graph.buffers
    by_op = collections.defaultdict(lambda: {"dispatches": 0, "bound": 0, "touched": 0})
    for d in sc.dispatches:
        row = by_op[kg.kernels[d.kernel].ops[0].op]
        row["dispatches"] += 1
        row["bound"] += sum(
            storage_bytes(buffers[b].numel, buffers[b].dtype) for b in (*d.reads, *d.writes)
        )
    for k in kg.kernels:
        by_op[k.ops[0].op]["touched"] += kernel_touched(k, buffers)
    total = {key: sum(r[key] for r in by_op.values()) for key in ("dispatches", "bound", "touched")}
    return {**total, "by_op": dict(by_op)}


def _line(label: str, f32: dict, mixed: dict) -> str:
    def cut(key):  # below a MiB on either side the ratio says nothing
        return f"{f32[key] / mixed[key]:.2f}x" if min(f32[key], mixed[key]) >= MiB else "-"

    return (
        f"  {label:<24} {f32['dispatches']:>6} {mixed['dispatches']:>6}"
        f" {f32['bound'] / MiB:>10.1f} {mixed['bound'] / MiB:>10.1f} {cut('bound'):>7}"
        f" {f32['touched'] / MiB:>9.1f} {mixed['touched'] / MiB:>9.1f} {cut('touched'):>7}"
    )


def report(path: str, target, top: int) -> dict:
    record = load_record(path)
    runs = {p: traffic(step_schedule(record, p, target)) for p in ("f32", "mixed_f16")}
    f32, mixed = runs["f32"], runs["mixed_f16"]
    print(f"{path}: one training step (MiB; cut = f32 / mixed_f16)")
    print(
        f"  {'':<24} {'disp':>6} {'disp16':>6} {'bound f32':>10} {'bound f16':>10} {'cut':>7}"
        f" {'touch f32':>9} {'touch f16':>9} {'cut':>7}"
    )
    print(_line("whole step", f32, mixed))
    zero = {"dispatches": 0, "bound": 0, "touched": 0}
    ops = sorted(set(f32["by_op"]) | set(mixed["by_op"]),
                 key=lambda o: -max(f32["by_op"].get(o, zero)["touched"],
                                    mixed["by_op"].get(o, zero)["touched"]))  # fmt: skip
    for op in ops[:top]:
        print(_line(op, f32["by_op"].get(op, zero), mixed["by_op"].get(op, zero)))
    return runs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("records", nargs="*", default=list(RECORDS), help="SML records")
    p.add_argument("--target", default="webgpu-spec", help=f"{' | '.join(PROFILES)}")
    p.add_argument(
        "--storage-buffers",
        type=int,
        default=None,
        help="maxStorageBuffersPerShaderStage to lower for (the spec's 8 by default; a "
        "discrete GPU's adapter offers more, and ops over many tensors then launch less)",
    )
    p.add_argument("--top", type=int, default=12, help="ops listed per record")
    p.add_argument("--out", default="bench/out/traffic.json")
    a = p.parse_args(argv)
    if a.target not in PROFILES:
        p.error(f"--target takes one of {', '.join(PROFILES)}, not {a.target!r}")
    # the declared limits, with shader-f16 (the mixed step's f16 kernels need it)
    target = dataclasses.replace(resolve(a.target), has_f16=True)
    if a.storage_buffers is not None:
        limits = {**target.limits, "max_storage_buffers_per_shader_stage": a.storage_buffers}
        target = dataclasses.replace(target, limits=limits)
    out = {}
    for path in a.records:
        if not Path(path).is_file():
            p.error(f"no record file {path!r}")
        out[path] = report(path, target, a.top)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"method": __doc__, "records": out}, indent=2))
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
