"""Weights onto a model and back (codecs layer): the name map and dtype rules.

A file's tensor names rarely equal a record's parameter paths exactly: a checkpoint
nests the state dict (``model.``), DataParallel prefixes ``module.``, a torch
Sequential numbers its children. ``resolve`` maps file names onto the model's dotted
paths through an explicit ``name_map`` (exact names and ``prefix.`` rewrites, longest
prefix first) and then, for names still unmatched, by dropping one shared leading
component. Every parameter must be covered once, with the right shape; anything
left over is an error unless ``strict`` is off. Values are widened (bf16 -> f32,
ints -> i32) and cast to the parameter's dtype on its device.
"""

from __future__ import annotations

from ..base.dtypes import as_dtype, f16, u32
from ..base.errors import ScellisError
from ..base.shapes import contiguous_strides
from ..runtime.creation import from_bytes
from ..runtime.dispatch import apply
from .raw import CODE_OF, RawTensor, from_values, widen


def _rename(name: str, name_map: dict[str, str]) -> str:
    """``name`` through the map: its exact entry, else the longest ``prefix.`` entry it
    starts with. The prefixes tried are the name's own (up to each dot, longest first),
    so the cost is the name's length whatever the map's size."""
    if name in name_map:
        return name_map[name]
    dot = name.rfind(".")
    while dot >= 0:
        src = name[: dot + 1]
        if src in name_map:
            return name_map[src] + name[dot + 1 :]
        dot = name.rfind(".", 0, dot)
    return name


def resolve(file_names, param_names, name_map: dict[str, str] | None = None) -> dict[str, str]:
    """{parameter path: file name} for every parameter the file provides."""
    wanted = set(param_names)
    renamed = {n: _rename(n, name_map or {}) for n in file_names}
    hits = {new: old for old, new in renamed.items() if new in wanted}
    if len(hits) < len(wanted):
        # one shared wrapper component (``model.``, ``module.``, ``state_dict.``)
        heads = {n.split(".", 1)[0] for n in renamed.values() if "." in n}
        if len(heads) == 1:
            head = heads.pop() + "."
            for old, new in renamed.items():
                short = new[len(head) :] if new.startswith(head) else new
                if short in wanted and short not in hits:
                    hits[short] = old
    return hits


def map_names(
    tensors: dict[str, RawTensor], shapes: dict[str, tuple], name_map: dict[str, str] | None = None,
    *, strict: bool = True,
) -> tuple[dict[str, RawTensor], list[str]]:  # fmt: skip
    """({parameter path: tensor} covering every path of ``shapes``, the names left unused)."""
    hits = resolve(tensors, shapes, name_map)
    missing = [p for p in shapes if p not in hits]
    if missing:
        held = ", ".join(list(tensors)[:6]) + (" ..." if len(tensors) > 6 else "")
        raise ScellisError(
            f"the weights have nothing for {len(missing)} parameter(s): {', '.join(missing[:6])}"
            + (" ..." if len(missing) > 6 else "")
            + f" (the file holds {held or 'no tensors'}; pass a name map)"
        )
    for path, fname in hits.items():
        if tuple(tensors[fname].shape) != tuple(shapes[path]):
            raise ScellisError(
                f"{fname!r} has shape {list(tensors[fname].shape)} but parameter {path!r} is "
                f"{list(shapes[path])}"
            )
    used = set(hits.values())
    unused = [n for n in tensors if n not in used]
    if strict and unused:
        raise ScellisError(f"the weights hold names no parameter takes: {', '.join(unused[:6])}")
    return {path: tensors[hits[path]] for path in shapes}, unused


def load_into(
    model, tensors: dict[str, RawTensor], name_map: dict[str, str] | None = None, *,
    strict: bool = True,
) -> list[str]:  # fmt: skip
    """Set ``model``'s parameters from ``tensors``; returns the file names left unused."""
    params = dict(model.named_parameters())
    mapped, unused = map_names(
        tensors, {k: tuple(p.shape) for k, p in params.items()}, name_map, strict=strict
    )
    for path, t in mapped.items():
        load_one(model, path, params[path], t)
    return unused


def load_one(model, path: str, p, t: RawTensor) -> int:
    """Set ``model``'s parameter ``path`` (now ``p``) from ``t``, on ``p``'s device and in
    its dtype; returns the bytes uploaded."""
    dt, data = widen(t)
    if as_dtype(dt) == p.dtype and _sole_storage(p):
        # written over the freshly drawn values: a second buffer per weight would hold
        # two copies of a layer at once
        p.device.upload(p._buf, data)
        p.requires_grad = True
    else:
        model.set_parameter(path, value_of(t, p, p.device).detach())
    return len(data)


def value_of(t: RawTensor, like, device):
    """``t`` as a new tensor of ``like``'s dtype on ``device``. Half-precision values go
    up as they are stored even where the device's shaders read no f16 (a browser's WebGPU
    without shader-f16): packed two to a word and widened there (``widen_f16``), which
    moves half the bytes of widening them on the host."""
    dt, data = widen(t)
    if dt == "f16" and not device.supports(f16) and data:
        n = len(data) // 2
        words = from_bytes(data + b"\0\0" * (n % 2), ((n + 1) // 2,), u32, device)
        v = apply("widen_f16", (words,), n=n).reshape(like.shape)
    else:
        v = from_bytes(data, like.shape, as_dtype(dt), device)
    return v if v.dtype == like.dtype else v.cast(like.dtype)


def _sole_storage(p) -> bool:
    """Whether ``p`` is its whole storage, in order (no view, nothing around it)."""
    return (
        p.offset == 0
        and p._buf.numel == p.numel
        and tuple(p.strides) == contiguous_strides(p.shape)
    )


def raw_of(t) -> RawTensor:
    """A tensor's values as a RawTensor of its own dtype (read back from its device)."""
    code = CODE_OF.get(t.dtype.name)
    if code is None:
        raise ScellisError(f"tensors of dtype {t.dtype} cannot be exported")
    flat = t.detach().reshape(-1).tolist() if t.numel else []
    if not isinstance(flat, list):
        flat = [flat]
    return from_values(code, t.shape, flat)


def state_of(model) -> dict[str, RawTensor]:
    """Every parameter of ``model`` by dotted path, as RawTensors."""
    return {path: raw_of(p) for path, p in model.named_parameters()}
