"""Quantising a model's frozen base (catalog layer): QLoRA's ``quantize_base``.

Which weights: every frozen dense weight, a plain dense block's or an LM head's own
projection (each becomes a ``QuantLinear``), or the base under a LoRA adapter (stored
quantised in place); see ``quant`` for the storage and the kernel. A head tied to its
embedding stays f32: the embedding looks rows of that weight up, which codes cannot serve.
"""

from __future__ import annotations

from ...base.errors import ScellisError
from ...base.quant import DEFAULT_BLOCK, check_format
from ..blocks.heads import LMHead
from ..blocks.linear import Linear
from ..module import Module
from .lora import DoRALinear, LoRALinear
from .quant import QuantLinear, store_quantized
from .select import replace_child


def quantize_base(
    model: Module, fmt: str, block: int = DEFAULT_BLOCK, double_quant: bool = False,
    encoded: dict | None = None,
) -> list[str]:  # fmt: skip
    """Store every frozen dense weight of ``model`` quantised; their block paths.
    ``double_quant`` (NF4): the block scales too, as int8 (``base.quant``).
    ``encoded``: {block path: ``quant.quantized``'s answer} for weights already encoded
    while the model was built (``model.finetune.build_model``); each is used up here.

    Run it after the adapters are attached and the model frozen: a weight that still
    trains keeps f32 (it needs its gradient), and DoRA, which normalises the adapted
    weight's rows, needs the dense weight itself."""
    check_format(fmt, block, double_quant)
    encoded = dict(encoded or {})
    done, device = _quantize_each(model, fmt, block, double_quant, encoded)
    if encoded:  # the build's guess of what this pass quantises was wrong
        raise ScellisError(
            f"internal: weights encoded while building were not quantised: {sorted(encoded)[:4]}"
        )
    if not done:
        raise ScellisError(
            "quantize_base found no frozen dense weight to quantise (freeze the base, e.g. "
            "with adapters, which freeze every pre-trained weight by default)"
        )
    # after ``_quantize_each`` has returned: its references to the old modules are gone
    _let_go(device)
    return done


def _quantize_each(
    model: Module, fmt: str, block: int, double_quant: bool, encoded: dict
) -> tuple[list, object]:  # fmt: skip
    """Quantise every frozen dense weight of ``model``: (their block paths, their device)."""
    done, device = [], None
    for path, mod in list(model.named_modules()):
        if getattr(mod, "quant", None) is not None:
            continue
        w = getattr(mod, "weight", None)
        dense = isinstance(mod, (Linear, LoRALinear)) or (
            isinstance(mod, LMHead) and mod.tied is None  # a tied head has weight None
        )
        if not dense or w is None or w.requires_grad:
            continue
        if isinstance(mod, DoRALinear):
            raise ScellisError(
                f"quantize_base cannot quantise {path!r}: DoRA normalises the adapted weight's "
                "rows, so it needs the dense weight (use peft/lora with a quantised base)"
            )
        ready = encoded.pop(path, None)
        device = ready[1]["weight_codes"].device if ready else w.device
        if isinstance(mod, LoRALinear):
            store_quantized(mod, fmt, block, double_quant, ready)
        else:
            new = QuantLinear(mod, fmt, block, double_quant, ready)
            new.train(mod.training)
            replace_child(model, path, new)
        done.append(path)
    return done, device


def _let_go(device) -> None:
    """Hand the replaced f32 weights' storages back to the device. A pooling device
    (WebGPU) keeps a released storage for a later buffer of its size class; no later
    buffer of a quantised run has a dense weight's size, so kept they would stay the
    largest part of its memory (a 1B model's f32 weights, ~4 GB, beside ~0.6 GB of
    codes). The recording device notes the same release for the planner."""
    empty = getattr(device, "empty_pool", None)
    if empty is not None:
        empty()


def quantized_bytes(model: Module) -> int:
    """Bytes of every quantised weight's codes and scales in ``model``."""
    return sum(m.quant.nbytes for _, m in model.named_modules() if getattr(m, "quant", None))
