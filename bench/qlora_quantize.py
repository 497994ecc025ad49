"""Quantising a frozen base: the pure-Python host path against the on-device primitives.

Usage::

    PYTHONPATH=src python3 bench/qlora_quantize.py                      # reference device
    PYTHONPATH=src python3 bench/qlora_quantize.py --device webgpu --size 256 --no-model

"host": what ``quantize_base`` did before quantising moved onto the device: read the f32
weight back (``tolist``), run ``base.quant.quantize`` in pure Python, upload the words
and scales. "device": ``Tensor.quantized`` (the ``quant_absmax`` and ``quant_codes``
primitives), timed to the readback of one code, so the device has finished. Both give the same
bits (checked here). Rows: one ``--size`` x ``--size`` weight per format, then (unless
``--no-model``) the dense weights of the ~100M-parameter Llama-shaped decoder of
``qlora_plan.py`` (12 layers of 4 x 768x768 and 3 x 768x2048, and the 8192x768 head:
91.2M weights), NF4; its host time is extrapolated from one 768x2048 weight, since the
pure-Python loop would take minutes.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import qlora_plan

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import scellis as sc  # noqa: E402
from scellis.base.dtypes import f32, u32  # noqa: E402
from scellis.base.quant import QuantSpec, quantize  # noqa: E402
from scellis.codecs.hf import llama  # noqa: E402
from scellis.devices import get_device  # noqa: E402
from scellis.ir.limits import human  # noqa: E402
from scellis.model.finetune import finetune_model  # noqa: E402
from scellis.runtime.creation import from_bytes  # noqa: E402

LAYER = [(768, 768)] * 4 + [(2048, 768)] * 2 + [(768, 2048)]
DECODER = LAYER * 12 + [(8192, 768)]


def host_path(w, spec: QuantSpec):
    words, scales = quantize(w.reshape(-1).tolist(), spec)
    codes = from_bytes(words.tobytes(), (spec.n_words,), u32, w.device)
    return codes, from_bytes(scales.tobytes(), (spec.n_scales,), f32, w.device)


def device_path(w, spec: QuantSpec):
    return w.quantized(**spec.attrs())


def timed(fn, w, spec):
    t0 = time.perf_counter()
    codes, scales = fn(w, spec)
    codes[-1:].tolist()  # the device has finished once a result is back
    return time.perf_counter() - t0, codes.tolist(), scales.tolist()


def weight(shape, device):
    rng = np.random.default_rng(sum(shape))
    return sc.tensor(rng.standard_normal(shape).astype(np.float32), device=device)


def one_weight(size: int, device) -> None:
    print("| weight | format | host s | device s | host / device | same bits |")
    print("|---|---|---|---|---|---|")
    for fmt in ("nf4", "int8"):
        w = weight((size, size), device)
        spec = QuantSpec(fmt, size, size)
        device_path(w, spec)  # pipelines compiled before timing
        th, hw, hs = timed(host_path, w, spec)
        td, dw, ds = timed(device_path, w, spec)
        same = hw == dw and hs == ds
        print(f"| {size}x{size} | {fmt} | {th:.3f} | {td:.3f} | {th / td:.0f}x | {same} |")


def decoder(device) -> None:
    n = sum(r * c for r, c in DECODER)
    w = weight((768, 2048), device)
    th, _, _ = timed(host_path, w, QuantSpec("nf4", 768, 2048))
    total = 0.0
    for r, c in DECODER:
        total += timed(device_path, weight((r, c), device), QuantSpec("nf4", r, c))[0]
    est = th * n / (768 * 2048)
    print(f"| decoder dense weights ({n:,}) | nf4 | ~{est:.0f} (extrapolated) | {total:.2f} "
          f"| ~{est / total:.0f}x | |")  # fmt: skip


def peak(layers: int) -> None:
    """Device bytes while a QLoRA record's model is built, loaded and quantised."""
    record = qlora_plan.decoder(1, 256)
    config = {**qlora_plan.CONFIG, "num_hidden_layers": layers}
    record = {**record, **llama.record(config, "bench/llama@1", 256)}
    dev = get_device("reference")
    plain, _ = finetune_model(record, device=dev)
    weights = plain.state_dict()  # the pre-trained weights, as an import gives them
    f32_bytes = 4 * sum(t.numel for t in weights.values())
    dev.reset_peak()
    start = dev.memory()["live_bytes"]
    qlora = {**record, "finetune": {"adapters": [qlora_plan.LORA], "quantize_base": "nf4"}}
    model, _ = finetune_model(qlora, weights, device=dev)
    mem = dev.memory()
    print(f"| {layers} layers | {human(f32_bytes)} | {human(mem['peak_bytes'] - start)} "
          f"| {human(mem['live_bytes'] - start)} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="reference")
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--no-model", action="store_true")
    ap.add_argument("--peak", type=int, metavar="LAYERS", help="only the load peak")
    args = ap.parse_args()
    if args.peak:
        print("| decoder | f32 weights | device peak while loading | after |\n|---|---|---|---|")
        return peak(args.peak)
    device = get_device(args.device) if args.device != "reference" else "reference"
    one_weight(args.size, device)
    if not args.no_model:
        decoder(device)


if __name__ == "__main__":
    main()
