"""A record's model ready to fine-tune, and the record it becomes (model layer).

``build_model`` builds the record's module tree, gives its parameters their
pre-trained values and applies the record's ``finetune:`` section. When that section
stores the base quantised (QLoRA), the tree is built with shape-only parameters
(``deferred_params``) and then made real one tensor at a time: a weight that ends up as
codes is loaded (or drawn), encoded and let go before the next one is made, so the
device never holds the base at full precision (a 1.1B-parameter base is 4.4 GB in f32,
0.6 GB as NF4 codes). Which weights those are is decided by applying the same section
to a shape-only copy first, so the choice is ``apply_finetune``'s own, and a drawn
parameter gets the values an eager construction would have drawn. ``finetune_model``
does this for a mapping of dotted names to tensors or nested lists (e.g. what a codec
imported).
``finetuned_record`` is the record of the model after a merge: swapped heads' new fields
written into their blocks, the ``finetune`` section dropped (a merged LoRA model is a
plain model of the same blocks).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..base.rng import Generator
from ..catalog.blocks.common import deferred_params
from ..catalog.module import Module
from ..catalog.peft import FinetunePlan, apply_finetune
from ..catalog.peft.plan import quantize_options
from ..catalog.peft.quant import quantized
from ..devices.base import get_device
from ..runtime.creation import tensor
from ..runtime.dispatch import apply, default_device
from ..runtime.inplace import rebind
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
        new = _as_value(value, old, old.device, name)
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
    if weights is None:
        return build_model(record, device=device, dtype=dtype)
    live = RecordModel(record, device="null").live_state()
    missing, extra = sorted(set(live) - set(weights)), sorted(set(weights) - set(live))
    if missing or extra:
        raise ScellisError(f"the weights do not fit: missing {missing}, unexpected {extra}")

    def value(path: str, t: Tensor) -> Tensor | None:
        return _as_value(weights[path], t, device, path) if path in weights else None

    return build_model(record, device=device, dtype=dtype, values=value)


def _as_value(value, like: Tensor, device, name: str) -> Tensor:
    """``value`` (a tensor, nested lists, an array) as a tensor of ``like``'s shape and
    dtype on ``device``."""
    dev = get_device(device) if device is not None else default_device()
    if isinstance(value, Tensor) and value.device is dev:
        new = apply("copy", (value.cast(like.dtype),))
    else:
        new = tensor(value.tolist() if isinstance(value, Tensor) else value, device=dev,
                     dtype=like.dtype)  # fmt: skip
    if tuple(new.shape) != tuple(like.shape):
        raise ScellisError(
            f"{name}: weights of shape {list(new.shape)}, the model has {list(like.shape)}"
        )
    return new


def build_model(
    record: dict, *, device=None, dtype=None, values=None
) -> tuple[RecordModel, FinetunePlan]:
    """(the record's model, what its ``finetune`` section did, if it has one).
    ``values(path, tensor)``: a parameter's or persistent buffer's pre-trained value on
    the device, or None to keep its drawn one (the module doc says in what order)."""
    seed = int(record.get("seed", 0) or 0)
    section = record.get("finetune") or {}
    targets = quantised_while_building(record)
    gen = Generator(seed, "init")
    encoded: dict = {}
    if not targets:
        model = RecordModel(record, device=device, dtype=dtype, gen=gen)
        for path, p in model.named_parameters() if values is not None else ():
            v = values(path, p)
            if v is not None:
                rebind(p, v.detach())
    else:
        with deferred_params() as later:
            model = RecordModel(record, device=device, dtype=dtype, gen=gen)
        options = quantize_options(section["quantize_base"])
        for path, p in model.named_parameters():
            make = later.get(id(p), (None, None))[1]
            _made_real(path, p, make, values, targets, options, encoded)
    for path, b in model.named_buffers(persistent_only=True) if values is not None else ():
        v = values(path, b)
        if v is not None:
            rebind(b, v.detach())
    return model, apply_finetune(model, section, seed=seed, encoded=encoded)


def _made_real(path, p, make, values, targets, options, encoded: dict) -> None:
    """Give the shape-only parameter ``p`` its value (loaded, else drawn), or, for a weight
    the base stores as codes, note its codes in ``encoded`` and let the value go (in a
    function of its own so that nothing keeps the last one alive)."""
    v = values(path, p) if values is not None else None
    if v is None and make is None:
        return  # made on the device already
    v = make() if v is None else v.detach()
    owner, _, name = path.rpartition(".")
    if name == "weight" and owner in targets:  # the stand-in stays until quantize_base
        p.requires_grad = False
        encoded[owner] = quantized(v, *options)
    else:
        rebind(p, v)


def quantised_while_building(record: dict) -> set[str]:
    """Paths of the dense blocks whose weight the record's ``quantize_base`` stores as
    codes (found on a shape-only copy); empty when nothing is quantised. A swapped head
    is a new block, made after this one, so it is quantised later as usual."""
    section = record.get("finetune") or {}
    if section.get("quantize_base") is None:
        return set()
    dry = RecordModel(record, device="null")
    swapped = tuple(section.get("swap_head") or {})
    done = apply_finetune(dry, section, seed=int(record.get("seed", 0) or 0)).quantized
    return {p for p in done if not any(p == s or p.startswith(s + ".") for s in swapped)}


def finetuned_record(record: dict) -> dict:
    """``record`` with swapped heads' fields in their blocks and no ``finetune``."""
    out = copy.deepcopy(record)
    sec = out.pop("finetune", None) or {}
    for path, fields in (sec.get("swap_head") or {}).items():
        if "." in path or path not in out.get("blocks", {}):
            raise ScellisError(f"swap_head {path!r} is inside a block; the record cannot say it")
        out["blocks"][path].update(fields)
    return out
