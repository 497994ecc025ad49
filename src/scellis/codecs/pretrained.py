"""Pre-trained weights for a run, and fine-tuned weights for export (codecs layer).

A record that ``scellis import`` wrote names its weights in its header
(``# weights: sha256:…``, an object in the store; ``convert.header_weights`` reads
them). ``pretrained_model`` builds the record's model, loads those weights and applies
the record's ``finetune:`` section, so ``scellis train`` fine-tunes the imported model
rather than a fresh one.
``finetuned_source`` is the export side: weights saved from a fine-tuning run (base
tensors plus adapters) are loaded into the adapted model, LoRA-family adapters are
merged into their dense weights, and what comes out is a plain record and its weights.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.peft import adapters_of, apply_finetune, merge_lora
from ..devices.base import get_device
from ..model.build import RecordModel
from ..model.finetune import build_model, finetuned_record
from ..runtime.dispatch import default_device
from .raw import RawTensor
from .weights import load_into, map_names, state_of, value_of


def pretrained_model(record: dict, tensors=None, *, device=None) -> RecordModel:
    """The record's model: ``tensors`` (pre-trained weights, e.g. ``header_weights``)
    loaded when given, then its ``finetune`` section applied (``model.finetune.
    build_model``: a quantised base never sits on the device at full precision). The
    file's names are matched against the record's parameters on the null device first,
    so weights that do not fit are refused before anything is allocated."""
    if tensors is None:
        return build_model(record, device=device)[0]
    dry = RecordModel(record, device="null")
    mapped, _ = map_names(tensors, {k: tuple(p.shape) for k, p in dry.named_parameters()})
    dev = get_device(device) if device is not None else default_device()

    def value(path: str, t):  # parameters only: buffers keep what the record makes
        return value_of(mapped[path], t, dev) if path in mapped else None

    return build_model(record, device=dev, values=value)[0]


def finetuned_source(record: dict, tensors: dict[str, RawTensor]):
    """(plain record, merged weights) of a fine-tuned run's weights, or None when
    ``tensors`` are not the adapted model's (e.g. the pre-trained weights alone)."""
    model = RecordModel(record, device="reference")
    apply_finetune(model, record["finetune"], seed=int(record.get("seed", 0) or 0))
    names = {n for n, _ in model.named_parameters()}
    if not names <= set(tensors):
        return None
    load_into(model, tensors)
    eager = [p for p, m in adapters_of(model) if m.lowering == "eager"]
    if eager:
        raise ScellisError(
            f"prefix/prompt adapters ({', '.join(eager)}) cannot be merged into the weights; "
            "export them from Python with their adapter modules"
        )
    if adapters_of(model):
        merge_lora(model)
    return finetuned_record(record), state_of(model)
