"""A restricted unpickler for PyTorch checkpoints (codecs layer): data only, no code.

``pickle`` runs whatever callables a file names. Here ``find_class`` resolves a global
only through ``ALLOWED``: torch's tensor-rebuild functions and storage types, each
replaced by a small function of ours that checks its arguments and builds a host
tensor, plus ``collections.OrderedDict``. Every other global (``os.system``,
``builtins.eval``, ``torch.load``...) is refused naming it, whether it arrives through
GLOBAL, STACK_GLOBAL, INST or an extension code; nothing of torch is imported.
"""

from __future__ import annotations

import functools
import io
import pickle
from collections import OrderedDict

from ...base.errors import ScellisError
from ..raw import ITEMSIZE, RawTensor

MAX_DIMS = 64

# torch storage class names -> dtype codes
_STORAGES = {
    "DoubleStorage": "F64",
    "FloatStorage": "F32",
    "HalfStorage": "F16",
    "BFloat16Storage": "BF16",
    "LongStorage": "I64",
    "IntStorage": "I32",
    "ShortStorage": "I16",
    "CharStorage": "I8",
    "ByteStorage": "U8",
    "BoolStorage": "BOOL",
}


class StorageType:
    """Stands for a torch storage class named in a pickle; never callable."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype

    def __reduce__(self):  # pragma: no cover - never pickled back
        raise ScellisError("storage markers cannot be pickled")


class Storage:
    """The bytes of one ``data/<key>`` member and the dtype they hold."""

    __slots__ = ("key", "dtype", "data")

    def __init__(self, key: str, dtype: str, data: bytes):
        self.key, self.dtype, self.data = key, dtype, data

    @property
    def numel(self) -> int:
        return len(self.data) // ITEMSIZE[self.dtype][0]

    def __setstate__(self, state):
        raise ScellisError("a pickle tried to set attributes on a storage")


def _ints(v, what: str) -> tuple:
    if not isinstance(v, tuple) or not all(type(x) is int for x in v):
        raise ScellisError(f"_rebuild_tensor_v2: {what} must be a tuple of ints, got {v!r:.80}")
    return v


def gather(st: Storage, offset: int, size: tuple, stride: tuple) -> bytes:
    """The C-order bytes of the strided view (offset, size, stride) of ``st``, checked."""
    isz = ITEMSIZE[st.dtype][0]
    n = 1
    for s in size:
        n *= s
    if n == 0:
        return b""
    last = offset + sum((s - 1) * t for s, t in zip(size, stride))
    if offset < 0 or last >= st.numel:
        raise ScellisError(
            f"a tensor view (offset {offset}, size {list(size)}, stride {list(stride)}) "
            f"reaches element {last} of storage {st.key!r}, which holds {st.numel}"
        )
    mv = memoryview(st.data)
    if not size:
        return bytes(mv[offset * isz : (offset + 1) * isz])
    # contiguous C order: one slice
    want, acc = [], 1
    for s in reversed(size):
        want.append(acc)
        acc *= s
    if all(s == 1 or t == w for s, t, w in zip(size, stride, reversed(want))):
        return bytes(mv[offset * isz : (offset + n) * isz])
    # a strided view: one strided slice of a typed view per innermost row
    flat = mv.cast({1: "B", 2: "H", 4: "I", 8: "Q"}[isz])
    out = bytearray()
    inner, inner_stride = size[-1], stride[-1]

    def walk(dim: int, base: int) -> None:
        if dim == len(size) - 1:
            if inner_stride == 0:
                out.extend(flat[base : base + 1].tobytes() * inner)
            else:
                out.extend(
                    flat[base : base + (inner - 1) * inner_stride + 1 : inner_stride].tobytes()
                )
            return
        for i in range(size[dim]):
            walk(dim + 1, base + i * stride[dim])

    walk(0, offset)
    return bytes(out)


def _hooks_ok(hooks) -> None:
    if hooks is not None and not (isinstance(hooks, dict) and not hooks):
        raise ScellisError("a tensor in the file carries backward hooks; refused")


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, hooks=None,
                       metadata=None, *, budget):  # fmt: skip
    if not isinstance(storage, Storage):
        raise ScellisError(f"_rebuild_tensor_v2 got {type(storage).__name__}, not a storage")
    if type(storage_offset) is not int:
        raise ScellisError("_rebuild_tensor_v2: the storage offset must be an int")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride) or any(s < 0 for s in size) or any(t < 0 for t in stride):
        raise ScellisError(f"_rebuild_tensor_v2: bad size {size} / stride {stride}")
    if len(size) > MAX_DIMS:
        raise ScellisError(f"_rebuild_tensor_v2: {len(size)} dimensions (at most {MAX_DIMS})")
    if not isinstance(requires_grad, bool):
        raise ScellisError("_rebuild_tensor_v2: requires_grad must be a bool")
    _hooks_ok(hooks)
    if metadata is not None and not isinstance(metadata, dict):
        raise ScellisError("_rebuild_tensor_v2: metadata must be a dict")
    n = 1
    for d in size:
        n *= d
    # an expanded view (stride 0) is legal but materialises bigger than its storage: the
    # whole file's tensors share one byte budget, so a tiny file cannot demand gigabytes
    budget[0] -= n * ITEMSIZE[storage.dtype][0]
    if budget[0] < 0:
        raise ScellisError("the tensors would take more memory than the size cap allows")
    return RawTensor(storage.dtype, size, gather(storage, storage_offset, size, stride))


def _rebuild_parameter(data, requires_grad=True, hooks=None, state=None):
    if not isinstance(data, RawTensor):
        raise ScellisError(f"_rebuild_parameter got {type(data).__name__}, not a tensor")
    _hooks_ok(hooks)
    if state is not None and not isinstance(state, dict):
        raise ScellisError("_rebuild_parameter_with_state: the state must be a dict")
    return data


def _ordered_dict(*args):
    if args and not (len(args) == 1 and isinstance(args[0], (list, tuple))):
        raise ScellisError("OrderedDict was called with unexpected arguments")
    return OrderedDict(*args)


ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): _ordered_dict,
    ("torch", "UntypedStorage"): StorageType("UntypedStorage", "U8"),
    ("torch.storage", "UntypedStorage"): StorageType("UntypedStorage", "U8"),
}
for _n, _code in _STORAGES.items():
    ALLOWED[("torch", _n)] = StorageType(_n, _code)


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles ``data.pkl``; ``load_storage(key)`` gives a storage's bytes; the tensors
    built may take at most ``max_bytes`` in all."""

    def __init__(self, data: bytes, load_storage, where: str, max_bytes: int):
        super().__init__(io.BytesIO(data))
        self._budget = [max_bytes]
        self._load_storage = load_storage
        self._where = where
        self._storages: dict[str, Storage] = {}

    def find_class(self, module: str, name: str):
        fn = ALLOWED.get((module, name))
        if fn is None:
            raise ScellisError(
                f"{self._where}: refused global {module}.{name} (only tensor and storage "
                "rebuilding is allowed in a state dict)"
            )
        if fn is _rebuild_tensor_v2:
            return functools.partial(fn, budget=self._budget)
        return fn

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ScellisError(f"{self._where}: unknown persistent id {pid!r:.80}")
        _, kind, key, _location, count = pid
        if not isinstance(kind, StorageType) or not isinstance(key, str) or type(count) is not int:
            raise ScellisError(f"{self._where}: malformed storage reference {pid!r:.80}")
        st = self._storages.get(key)
        if st is None:
            data = self._load_storage(key)
            st = Storage(key, kind.dtype, data)
            # typed storages count elements, untyped ones bytes: both must cover the member
            if count < 0 or count * ITEMSIZE[kind.dtype][0] != len(data):
                raise ScellisError(
                    f"{self._where}: storage {key!r} claims {count} {kind.dtype} elements "
                    f"but its member holds {len(data)} bytes"
                )
            self._storages[key] = st
        elif st.dtype != kind.dtype:
            raise ScellisError(f"{self._where}: storage {key!r} is read as two dtypes")
        return st

    def run(self):
        try:
            return self.load()
        except ScellisError:
            raise
        except RecursionError:
            raise ScellisError(f"{self._where}: the pickle nests too deeply") from None
        except Exception as e:  # every malformed stream is the file's fault
            what = f"{type(e).__name__}: {e}"
            raise ScellisError(f"{self._where}: bad pickle data ({what})") from None
