"""A record's model ready to fine-tune, and the record it becomes (model layer).

``finetune_model`` builds the record's module tree, loads pre-trained weights into it
(a mapping of dotted names to tensors or nested lists, e.g. what a codec imported)
and applies the record's ``finetune:`` section. ``finetuned_record`` is the record of
the model after a merge: swapped heads' new fields written into their blocks, the
``finetune`` section dropped (a merged LoRA model is a plain model of the same blocks).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..base.rng import Generator
from ..catalog.module import Module
from ..catalog.peft import FinetunePlan, apply_finetune
from ..runtime.creation import tensor
from ..runtime.dispatch import apply
from ..runtime.tensor import Tensor
from .build import RecordModel


@no_grad()
def load_weights(model: Module, weights: Mapping, *, strict: bool = True) -> list[str]:
    """Replace parameters and buffers by ``weights`` (same names and shapes); the names
    loaded. ``strict``: every model tensor must be given and nothing else."""
    live = model.live_state()
    missing, extra = sorted(set(live) - set(weights)), sorted(set(weights) - set(live))
    if strict and (missing or extra):
        raise ScellisError(f"the weights do not fit: missing {missing}, unexpected {extra}")
    owners = dict(model.named_modules())
    done = []
    for name, value in weights.items():
        if name not in live:
            continue
        old = live.pop(name)  # freed once replaced: one weight more than the model, not two
        if isinstance(value, Tensor) and value.device is old.device:
            new = apply("copy", (value.cast(old.dtype),))
        else:
            data = value.tolist() if isinstance(value, Tensor) else value
            new = tensor(data, device=old.device, dtype=old.dtype)
        if tuple(new.shape) != tuple(old.shape):
            raise ScellisError(
                f"{name}: weights of shape {list(new.shape)}, the model has {list(old.shape)}"
            )
        owner, _, attr = name.rpartition(".")
        mod = owners[owner]
        if attr in mod._params:
            new.requires_grad = old.requires_grad
            mod._params[attr] = new
        else:
            mod._buffers[attr] = new
        object.__setattr__(mod, attr, new)
        done.append(name)
    return done


def finetune_model(
    record: dict, weights: Mapping | None = None, *, device=None, dtype=None
) -> tuple[RecordModel, FinetunePlan]:
    """The record's model with ``weights`` loaded and its ``finetune`` section applied."""
    seed = int(record.get("seed", 0) or 0)
    model = RecordModel(record, device=device, dtype=dtype, gen=Generator(seed, "init"))
    if weights is not None:
        load_weights(model, weights)
    plan = apply_finetune(model, record.get("finetune"), seed=seed)
    return model, plan


def finetuned_record(record: dict) -> dict:
    """``record`` with swapped heads' fields in their blocks and no ``finetune``."""
    out = copy.deepcopy(record)
    sec = out.pop("finetune", None) or {}
    for path, fields in (sec.get("swap_head") or {}).items():
        if "." in path or path not in out.get("blocks", {}):
            raise ScellisError(f"swap_head {path!r} is inside a block; the record cannot say it")
        out["blocks"][path].update(fields)
    return out
