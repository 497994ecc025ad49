"""A TF.js weights manifest (codecs layer): shard files to float32 tensors by weight name.

Each group of the manifest lists shard files (joined in order) and the weights laid out
in them back to back, each ``numel * bytes`` long. Quantised weights are widened as
TF.js' ``decodeWeights`` does: uint8/uint16 as ``q * scale + min`` (computed in double,
stored as float32), float16 exactly. Shards are named relative to ``model.json`` and
must lie beside it or below (a link that leads out is refused too), so a manifest
cannot read other files of the machine; a shard listed twice is refused (its bytes
would be read again for each listing).
"""

from __future__ import annotations

import array
import math
import sys
from pathlib import Path

from ...base.errors import ScellisError, shown
from ...base.files import inside, read_file
from ..raw import ITEMSIZE, RawTensor, array_of, numel

# quantisation dtype -> the raw code its values are stored in
_QUANTISED = {"uint8": "U8", "uint16": "U16", "float16": "F16"}
_PLAIN = {"float32": "F32"}
_F32_MAX = 3.4028234663852886e38


def _shard(folder: Path, name, where: str) -> Path:
    """The shard file ``name`` resolved: inside the folder (no absolute path, no "..",
    no link that leads out), and present."""
    path = inside(folder, name, f"{where}: weight shard")
    if not path.exists():
        raise ScellisError(f"{where}: weight shard {shown(name)!r} is missing (looked in {folder})")
    return path


def _dims(spec: dict, where: str) -> tuple[int, ...]:
    shape = spec.get("shape")
    ok = isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)
    if not ok or len(shape) > 8:
        raise ScellisError(
            f"{where}: weight {shown(repr(spec.get('name')), 60)} has shape "
            f"{shown(repr(shape), 60)}"
        )
    return tuple(shape)


def _decode(spec: dict, data: bytes, shape: tuple, where: str) -> RawTensor:
    name, q = spec["name"], spec.get("quantization")
    if spec.get("dtype", "float32") != "float32":
        raise ScellisError(
            f"{where}: weight {shown(name)!r} is {shown(repr(spec.get('dtype')), 60)}; only "
            "float32 weights are read"
        )
    if q is None:
        return RawTensor("F32", shape, data)
    return RawTensor("F32", shape, _widened(_QUANTISED[q["dtype"]], q, data, name, where))


_CHUNK = 1 << 16  # values widened at a time


def _widened(code: str, q: dict, data: bytes, name: str, where: str) -> bytes:
    """The float32 bytes of quantised ``data``, built a chunk at a time: as one list of
    Python floats they would take 32 bytes for each byte of a uint8 shard."""
    out, size = array.array("f"), ITEMSIZE[code][0]
    scale, low = (1.0, 0.0) if code == "F16" else (float(q["scale"]), float(q["min"]))
    top = 1.0 if code == "F16" else float((1 << 8 * size) - 1)
    # every value lies between low and top * scale + low: both must be float32 numbers
    if not all(math.isfinite(v) and abs(v) <= _F32_MAX for v in (low, top * scale + low)):
        raise ScellisError(
            f"{where}: weight {shown(name)!r}: scale and min put values outside float32"
        )
    for i in range(0, len(data), _CHUNK * size):
        values = array_of(code, data[i : i + _CHUNK * size])
        out.extend(values if code == "F16" else [v * scale + low for v in values])
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def _spec_code(spec: dict, where: str) -> str:
    q = spec.get("quantization")
    if q is None:
        code = _PLAIN.get(spec.get("dtype", "float32"))
    else:
        code = _QUANTISED.get(q.get("dtype")) if isinstance(q, dict) else None
        if (
            code
            and code != "F16"
            and not all(
                isinstance(q.get(k), (int, float)) and not isinstance(q.get(k), bool)
                for k in ("scale", "min")
            )
        ):
            raise ScellisError(
                f"{where}: weight {shown(repr(spec.get('name')), 60)}: {code} needs scale and min"
            )
    if code is None:
        what = q.get("dtype") if isinstance(q, dict) else spec.get("dtype")
        raise ScellisError(
            f"{where}: weight {shown(repr(spec.get('name')), 60)} has dtype "
            f"{shown(repr(what), 60)}; read are float32 and "
            "uint8/uint16/float16 quantisation"
        )
    return code


def read_weights(folder: Path, manifest, where: str, max_bytes: int) -> dict[str, RawTensor]:
    """Every weight of ``manifest`` (model.json's ``weightsManifest``) by its name."""
    if not isinstance(manifest, list):
        raise ScellisError(f"{where}: weightsManifest must be a list of groups")
    out: dict[str, RawTensor] = {}
    budget, seen = max_bytes, set()
    for group in manifest:
        if not isinstance(group, dict) or not isinstance(group.get("paths"), list):
            raise ScellisError(f"{where}: a weightsManifest group needs paths and weights")
        specs = group.get("weights")
        if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
            raise ScellisError(f"{where}: a weightsManifest group's weights must be a list")
        pieces = []
        for name in group["paths"]:
            path = _shard(folder, name, where)
            if path in seen:  # a shard holds its bytes once: no file is read twice
                raise ScellisError(f"{where}: weight shard {shown(name)!r} is listed twice")
            seen.add(path)
            if budget <= 0:
                raise ScellisError(f"{where}: the weight shards are over the size cap")
            # read_file: a regular file only (a FIFO or a device is refused, not opened)
            pieces.append(read_file(path, limit=budget))
            budget -= len(pieces[-1])
        blob = b"".join(pieces)
        at = 0
        for spec in specs:
            name = spec.get("name")
            if not isinstance(name, str) or name in out:
                raise ScellisError(
                    f"{where}: weight name {shown(repr(name), 60)} is missing or repeated"
                )
            shape = _dims(spec, where)
            size = numel(shape) * ITEMSIZE[_spec_code(spec, where)][0]
            if at + size > len(blob):
                raise ScellisError(
                    f"{where}: weight {shown(name)!r} ends at byte {at + size}; its shards hold "
                    f"{len(blob)} bytes"
                )
            out[name] = _decode(spec, blob[at : at + size], shape, where)
            at += size
        if at != len(blob):
            raise ScellisError(
                f"{where}: the shards of a weight group hold {len(blob)} bytes; its weights "
                f"take {at}"
            )
    return out
