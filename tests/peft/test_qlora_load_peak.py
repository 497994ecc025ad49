"""Loading pre-trained weights into a model frees each replaced weight as the next one
loads (a dotted-name mapping through ``load_weights``, an import's tensors through
``load_into``), so a QLoRA model built from pre-trained weights holds the f32 model
once plus a weight, never two models: the reference device's allocation accounting."""

from __future__ import annotations

from peftutil import char_model

from scellis.codecs.weights import load_into, raw_of
from scellis.devices import get_device
from scellis.model.finetune import load_weights


def _bytes(tensors) -> tuple[int, int]:
    sizes = [t.numel * t.dtype.itemsize for t in tensors]
    return sum(sizes), max(sizes)


def _load_peak(load) -> tuple[int, int, int]:
    """(peak bytes over the start while ``load`` runs, model bytes, largest weight)."""
    dev = get_device("reference")
    model = char_model(d=32, layers=3)
    total, largest = _bytes([p for _, p in model.named_parameters()])
    dev.reset_peak()
    start = dev.memory()["live_bytes"]
    load(model)
    return dev.memory()["peak_bytes"] - start, total, largest


def test_load_weights_holds_one_weight_more_than_the_model():
    source = char_model(seed=1, d=32, layers=3).state_dict()
    peak, total, largest = _load_peak(lambda m: load_weights(m, source))
    assert peak <= 2 * largest < total / 2


def test_an_import_holds_one_weight_more_than_the_model():
    source = {k: raw_of(p) for k, p in char_model(seed=1, d=32, layers=3).named_parameters()}
    peak, total, largest = _load_peak(lambda m: load_into(m, source))
    assert peak <= 2 * largest < total / 2
