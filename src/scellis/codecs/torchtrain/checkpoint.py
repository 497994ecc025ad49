"""train.py's checkpoints read without torch (codecs layer).

A checkpoint is one safetensors file (see the package's ``ckpt.py``): tensors
``model.<name>`` and ``optim.<name>.<buffer>``, metadata ``format`` =
``scellis.torch-train/1`` and ``state`` (JSON: step, epoch, batch, seed, optimizer
options and step counts, scheduler, loss scale, metrics, the record's text).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError
from ...base.files import read_file
from ...base.jsontext import load_json
from ...store.safetensors import loads
from ..raw import RawTensor

FORMAT = "scellis.torch-train/1"


@dataclass
class TrainCheckpoint:
    model: dict[str, RawTensor]
    optim: dict[str, RawTensor]  # "<parameter>.<buffer>" -> tensor
    state: dict
    path: Path


def is_train_checkpoint(path) -> bool:
    """True for a train.py checkpoint (a safetensors file whose metadata says so)."""
    try:  # read_file: a FIFO or a device given here is never opened blocking
        head = read_file(path, head=8)
        if len(head) < 8:
            return False
        (n,) = struct.unpack("<Q", head)
        if n > 1 << 26:
            return False
        header = load_json(read_file(path, head=8 + n)[8:], str(path))
    except ScellisError:
        return False  # not this format: the codec that reads it says why
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def read_checkpoint(path) -> TrainCheckpoint:
    path = Path(path)
    tensors, meta = loads(read_file(path))
    if meta.get("format") != FORMAT:
        raise ScellisError(f"{path}: not a train.py checkpoint ({FORMAT})")
    model, optim = {}, {}
    for name, (code, shape, view) in tensors.items():
        t = RawTensor(code, tuple(shape), bytes(view))
        if name.startswith("model."):
            model[name[len("model.") :]] = t
        elif name.startswith("optim."):
            optim[name[len("optim.") :]] = t
    return TrainCheckpoint(model, optim, json.loads(meta["state"]), path)
