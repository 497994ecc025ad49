"""Checkpoints of a ``TrainState`` in the store (train layer): state dict <-> manifest + objects.

``save`` reads the state's device tensors back (the one readback a checkpoint costs),
writes the model's tensors as one safetensors object (``weights``, keyed by the dotted
parameter paths) and the optimizer's buffers plus the loss-scale state as another
(``optimizer_state``), then the manifest that names them. The rest of the state dict
(option values, per-parameter step counts, scheduler, RNG counters, epoch/step/batch,
early-stopping counters, metrics) is JSON in the manifest, with each tensor leaf
replaced by ``{"$tensor": key}``. ``load`` inverts it onto a freshly built state.

Writes are ordered tensor objects first, manifest second, the records row last: a
crash between any two leaves the previous checkpoint the latest complete one.
``fault``, when given, is called with the name of each point between writes
(``after_weights``, ``before_manifest``) and the step: the seam fault-injection tests use.
"""

from __future__ import annotations

from ..base.dtypes import as_dtype
from ..base.errors import ScellisError
from ..runtime.creation import from_bytes
from ..runtime.tensor import Tensor
from ..store.manifest import read_manifest, write_manifest
from ..store.objects import ObjectStore
from ..store.safetensors import dumps, loads
from .state import TrainState

_CODES = {"f16": "F16", "f32": "F32", "f64": "F64", "i32": "I32", "u32": "U32", "bool": "BOOL"}
DTYPE_CODES = _CODES  # a dtype's safetensors code, for checks of imported tensors
_NAMES = {v: k for k, v in _CODES.items()}


async def tensor_bytes(t: Tensor) -> bytes:
    """The tensor's elements in host (little-endian, C order) layout."""
    return await t.read_bytes()


async def _pack(tree, prefix: str, out: dict):
    """``tree`` with tensor leaves moved into ``out`` as safetensors entries."""
    if isinstance(tree, Tensor):
        out[prefix] = (_CODES[tree.dtype.name], tuple(tree.shape), await tensor_bytes(tree))
        return {"$tensor": prefix}
    if isinstance(tree, dict):
        return {
            k: await _pack(v, f"{prefix}.{k}" if prefix else str(k), out) for k, v in tree.items()
        }
    if isinstance(tree, (list, tuple)):
        return [await _pack(v, f"{prefix}.{i}", out) for i, v in enumerate(tree)]
    return tree


def _unpack(tree, tensors: dict, device):
    if isinstance(tree, dict):
        if set(tree) == {"$tensor"}:
            key = tree["$tensor"]
            if key not in tensors:
                raise ScellisError(f"checkpoint: tensor {key!r} is missing from its object")
            code, shape, view = tensors[key]
            if code not in _NAMES:
                raise ScellisError(f"checkpoint: tensor {key!r} has dtype {code}, not loadable")
            return from_bytes(bytes(view), shape, as_dtype(_NAMES[code]), device)
        return {k: _unpack(v, tensors, device) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_unpack(v, tensors, device) for v in tree]
    return tree


def _rng_out(state: dict) -> dict:
    return {
        "algorithm": state["algorithm"],
        "seed": state["seed"],
        "name": state["name"],
        "counter": {"step": state["step"], "draw": state["draw"]},
    }


def _rng_in(state: dict) -> dict:
    if state.get("algorithm") != "philox4x32":
        raise ScellisError(f"checkpoint: RNG algorithm {state.get('algorithm')!r} is unknown")
    c = state["counter"]
    return {
        "algorithm": "philox4x32",
        "seed": state["seed"],
        "name": state["name"],
        "step": c["step"],
        "draw": c["draw"],
    }


async def save(
    ts: TrainState,
    objects: ObjectStore,
    *,
    record: str,
    dataset: str | None,
    tier: str,
    extra: dict | None = None,
    fault=None,
) -> tuple[str, dict]:
    """Write a checkpoint of ``ts``; returns (manifest hash, manifest). The live tensors
    are read one at a time, in place (nothing trains while a checkpoint is written), so
    the device holds no second copy of the model and its optimizer state meanwhile."""
    sd = ts.state_dict(snapshot=False)
    weights: dict = {}
    model = await _pack(sd["model"], "", weights)
    opt: dict = {}
    optimizer = await _pack(sd["optimizer"], "optimizer", opt)
    loss_scale = await _pack(sd["loss_scale"], "loss_scale", opt)
    w_hash = objects.put(dumps(weights, {"format": "scellis"}))
    if fault is not None:
        fault("after_weights", ts.step)
    o_hash = objects.put(dumps(opt, {"format": "scellis"}))
    if fault is not None:
        fault("before_manifest", ts.step)
    manifest = {
        "version": sd["version"],
        "weights": w_hash,
        "weights_keys": model,
        "optimizer_state": o_hash,
        "optimizer": optimizer,
        "loss_scale": loss_scale,
        "scheduler": sd["scheduler"],
        "rng_state": {k: _rng_out(v) for k, v in sd["rng"].items()},
        "seed": sd["seed"],
        "epoch": sd["epoch"],
        "step": sd["step"],
        "batch": sd["batch"],
        "early_stopping": sd["early_stopping"],
        "metrics": sd["metrics"],
        "record": record,
        "dataset": dataset,
        "tier": tier,
        **(extra or {}),
    }
    return write_manifest(objects, manifest), manifest


def state_dict_of(objects: ObjectStore, manifest_hash: str, device) -> tuple[dict, dict]:
    """The ``TrainState.state_dict()`` a manifest describes (tensors on ``device``)."""
    m = read_manifest(objects, manifest_hash)
    weights, _ = loads(objects.get(m["weights"]))
    opt, _ = loads(objects.get(m["optimizer_state"]))
    sd = {
        "version": m["version"],
        "seed": m["seed"],
        "epoch": m["epoch"],
        "step": m["step"],
        "batch": m["batch"],
        "model": _unpack(m["weights_keys"], weights, device),
        "optimizer": _unpack(m["optimizer"], opt, device),
        "scheduler": m["scheduler"],
        "loss_scale": _unpack(m["loss_scale"], opt, device),
        "rng": {k: _rng_in(v) for k, v in m["rng_state"].items()},
        "early_stopping": m["early_stopping"],
        "metrics": m["metrics"],
    }
    return sd, m


def load(ts: TrainState, objects: ObjectStore, manifest_hash: str) -> dict:
    """Restore ``ts`` from a checkpoint; returns its manifest."""
    sd, m = state_dict_of(objects, manifest_hash, ts.device)
    ts.load_state_dict(sd)
    return m
