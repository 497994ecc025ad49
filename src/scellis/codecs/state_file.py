"""``scellis.save`` / ``scellis.load`` (codecs layer): state dicts as safetensors + JSON.

A saved object is a tree of dicts, lists and tuples whose leaves are tensors or
JSON values (numbers, strings, booleans, None). Tensors go into one safetensors file
(readable by the ``safetensors`` package and by torch); the tree, with each tensor
replaced by a reference to its name, goes into the file's ``__metadata__`` as JSON.
Nothing is ever pickled, so loading a file runs no code from it.

A flat ``{name: tensor}`` dict (a module's state dict) keeps its keys as tensor
names, so ``safetensors.torch.load_file`` gives torch the same state dict. A
safetensors file written elsewhere (no tree) loads as a flat dict; bf16 widens to
f32 and 64-bit integers narrow to i32, as every weight import does.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from ..base.dtypes import as_dtype
from ..base.errors import ScellisError
from ..base.files import read_file, write_file
from ..runtime.creation import from_bytes
from ..runtime.inplace import host_bytes
from ..runtime.tensor import Tensor
from ..store import safetensors as st
from .raw import CODE_OF, RawTensor, widen

TREE_KEY = "scellis.tree"
_MARKS = ("__tensor__", "__tuple__", "__items__", "__float__")


class _Packer:
    """Walks the tree: tensors out by unique names, everything else into JSON."""

    def __init__(self):
        self.tensors: dict[str, st.Tensor] = {}

    def name(self, path: list[str]) -> str:
        base = ".".join(path) or "tensor"
        name, k = base, 1
        while name in self.tensors or name == "__metadata__":
            name, k = f"{base}#{k}", k + 1
        return name

    def pack(self, obj, path: list[str]):
        if isinstance(obj, Tensor):
            code = CODE_OF.get(obj.dtype.name)
            if code is None:
                raise ScellisError(f"cannot save a tensor of dtype {obj.dtype}")
            name = self.name(path)
            self.tensors[name] = (code, tuple(obj.shape), host_bytes(obj))
            return {"__tensor__": name}
        if hasattr(obj, "__array_interface__") and getattr(obj, "ndim", None) == 0:
            obj = obj.item()  # a NumPy scalar (a best accuracy, an epoch): its number
        if isinstance(obj, float) and not math.isfinite(obj):
            return {"__float__": repr(obj)}
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, tuple):
            return {"__tuple__": [self.pack(v, [*path, str(i)]) for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.pack(v, [*path, str(i)]) for i, v in enumerate(obj)]
        if isinstance(obj, dict):
            if all(isinstance(k, str) and k not in _MARKS for k in obj):
                return {k: self.pack(v, [*path, k]) for k, v in obj.items()}
            items = [[self.pack(k, [*path, "key"]), self.pack(v, [*path, str(k)])]
                     for k, v in obj.items()]  # fmt: skip
            return {"__items__": items}
        raise ScellisError(
            f"cannot save a {type(obj).__name__} at {'.'.join(path) or 'the top'}: save "
            "tensors, numbers, strings, lists, tuples and dicts (nothing is pickled)"
        )


def save(obj, path) -> None:
    """Write ``obj`` (a state dict, a tensor, or a tree of them) to ``path``: a file
    name or a file object opened for writing bytes."""
    packer = _Packer()
    flat = isinstance(obj, dict) and all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items()
    )
    if flat:  # the keys themselves name the tensors: torch reads the same state dict
        tree = {k: packer.pack(v, [k]) for k, v in obj.items()}
    else:
        tree = packer.pack(obj, [])
    meta = {TREE_KEY: json.dumps(tree, separators=(",", ":"), allow_nan=False)}
    data = st.dumps(packer.tensors, meta)
    if hasattr(path, "write"):  # a file object (io.BytesIO), as torch.save takes
        path.write(data)
    else:
        write_file(os.fspath(path), data)  # whole, never via a link


def _torch_saved(data: bytes) -> bool:
    """Whether ``data`` is what ``torch.save`` wrote: its zip archive, or a bare pickle
    (the pre-1.6 format, read only to be refused clearly). A safetensors file starts
    with its header's length and then ``{``; a length whose first byte is 0x80 must
    not pass for a pickle."""
    return data[:4] == b"PK\x03\x04" or (data[:1] == b"\x80" and data[8:9] != b"{")


def _from_torch(where: str, device):
    """A ``torch.save`` file as ``torch.load`` gives it, tensors made on ``device``
    (64-bit integers narrowed to i32, bf16 widened, as every import does)."""
    from .base import make  # the torch codec, through the catalog like every format

    tree = make("codec/torch").read_tree(Path(where))

    def made(node):
        if isinstance(node, RawTensor):
            dt, raw = widen(node)
            return from_bytes(raw, node.shape, as_dtype(dt), device)
        if isinstance(node, dict):
            return {k: made(v) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return type(node)(made(v) for v in node)
        return node

    return made(tree)


def _torch_bytes(data: bytes, device):
    """A ``torch.save`` archive held in memory: the torch codec reads files, so through
    a temporary one."""
    with tempfile.TemporaryDirectory() as folder:
        where = os.path.join(folder, "saved.pt")
        write_file(where, data)
        return _from_torch(where, device)


def _unpack(node, tensors: dict):
    if isinstance(node, list):
        return [_unpack(v, tensors) for v in node]
    if not isinstance(node, dict):
        return node
    if "__tensor__" in node:
        return tensors[node["__tensor__"]]
    if "__tuple__" in node:
        return tuple(_unpack(v, tensors) for v in node["__tuple__"])
    if "__items__" in node:
        return {_unpack(k, tensors): _unpack(v, tensors) for k, v in node["__items__"]}
    if "__float__" in node:
        return float(node["__float__"])
    return {k: _unpack(v, tensors) for k, v in node.items()}


def load(path, device=None):
    """Read what ``save`` wrote, any safetensors file, or what ``torch.save`` wrote
    (through the restricted unpickler: no code runs) onto ``device``."""
    if hasattr(path, "read"):  # a file object, as torch.load takes
        data, where = path.read(), getattr(path, "name", "<file object>")
        if _torch_saved(data):
            return _torch_bytes(data, device)
    else:
        where = os.fspath(path)
        data = read_file(where)
        if _torch_saved(data):
            return _from_torch(where, device)
    try:
        views, meta = st.loads(data)
    except ScellisError as e:
        raise ScellisError(f"{where}: {e}") from None
    dev = device
    tensors = {}
    for name, (code, shape, data) in views.items():
        dt, raw = widen(RawTensor(code, shape, bytes(data)))
        tensors[name] = from_bytes(raw, shape, as_dtype(dt), dev)
    if TREE_KEY not in meta:
        return tensors
    try:
        return _unpack(json.loads(meta[TREE_KEY]), tensors)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        # a tree that is not JSON, nests past the stack, names a tensor the file lacks...
        what = "nests too deeply" if isinstance(e, RecursionError) else f"{type(e).__name__}: {e}"
        raise ScellisError(
            f"{where}: the saved tree ({TREE_KEY}) is malformed ({what:.200})"
        ) from None
