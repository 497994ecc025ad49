"""A restricted unpickler for PyTorch checkpoints (codecs layer): data only, no code.

``pickle`` runs whatever callables a file names. Here ``find_class`` resolves a global
only through ``ALLOWED``: torch's tensor-rebuild functions and storage types, each
replaced by a small function of ours that checks its arguments, plus
``collections.OrderedDict``. Every other global (``os.system``, ``builtins.eval``,
``torch.load``...) is refused naming it, whether it arrives through GLOBAL,
STACK_GLOBAL, INST or OBJ; extension codes are refused outright (they would go through
a process-wide cache); nothing of torch is imported.

What a pickle can touch is made per load and immutable to it: every global it names is
a fresh object of this load that refuses attributes, and BUILD (``__setstate__``) is
allowed only where torch's own format emits it, on an ``OrderedDict`` the same pickle
built (a state dict's ``_metadata``, which is dropped). So a file can neither raise the
size cap of its own load nor change how a later file loads.

Tensors come out as ``View``s: checked (dtype, size, stride inside the storage) but not
yet copied. ``materialise`` copies them after the caller has counted what they will
take, references included: a pickle that names one tensor 2**40 times through memo
references is refused before anything is allocated.
"""

from __future__ import annotations

import io
import pickle
import reprlib
from collections import OrderedDict

from ...base.errors import ScellisError, shown
from ...base.shapes import is_contiguous
from ..raw import ITEMSIZE, RawTensor

MAX_DIMS = 64
# A dict key or set item a pickle builds is hashed, and hashing a tuple visits all of it
# in C, without a depth guard: a key of tuples nested 200,000 deep overflows the C stack
# (a crash), and one of 60 tuples each naming the one before twice (memo references) is
# 2**60 elements to hash. Keys may be tuples of at most this many elements in all.
MAX_KEY_ITEMS = 64

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


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, 60, 40, 40
_REPR.maxtuple = _REPR.maxlist = _REPR.maxdict = _REPR.maxset = 6


def brief(v) -> str:
    """A short repr of a value a pickle built: a few levels and items of it, so that a
    message never walks a structure that shares itself exponentially (or a huge text)."""
    return _REPR.repr(v)


def _check_key(k, where: str) -> None:
    """Refuse a dict key or set item whose hash would not end (see ``MAX_KEY_ITEMS``)."""
    todo, seen = [k], 0
    while todo:
        v = todo.pop()
        if type(v) is tuple:
            seen += len(v)
            if seen > MAX_KEY_ITEMS:
                raise ScellisError(
                    f"{where}: a dict key or set item nests more than {MAX_KEY_ITEMS} values"
                )
            todo.extend(v)


class _Frozen:
    """Base of every object a pickle can reach: no attribute can be set or built."""

    __slots__ = ()

    def __setattr__(self, name, value):
        raise ScellisError("a pickle tried to set an attribute")

    def __delattr__(self, name):
        raise ScellisError("a pickle tried to delete an attribute")

    def __setstate__(self, state):
        raise ScellisError("a pickle tried to set state on a rebuilt object")

    def __reduce__(self):
        raise ScellisError("objects of a restricted load cannot be pickled")

    def _init(self, **values) -> None:
        for k, v in values.items():
            object.__setattr__(self, k, v)


class StorageType(_Frozen):
    """Stands for a torch storage class named in a pickle; never callable."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: str):
        self._init(name=name, dtype=dtype)


class Storage(_Frozen):
    """The bytes of one ``data/<key>`` member and the dtype they hold."""

    __slots__ = ("key", "dtype", "data")

    def __init__(self, key: str, dtype: str, data: bytes):
        self._init(key=key, dtype=dtype, data=data)

    @property
    def numel(self) -> int:
        return len(self.data) // ITEMSIZE[self.dtype][0]


class View(_Frozen):
    """A checked strided view of a storage: what ``_rebuild_tensor_v2`` returns."""

    __slots__ = ("storage", "offset", "size", "stride")

    def __init__(self, storage: Storage, offset: int, size: tuple, stride: tuple):
        self._init(storage=storage, offset=offset, size=size, stride=stride)

    @property
    def nbytes(self) -> int:
        """The bytes the view takes once copied out (an expanded, stride-0 view counts at
        its full size, not its storage's)."""
        n = ITEMSIZE[self.storage.dtype][0]
        for s in self.size:
            n *= s
        return n

    @property
    def rows(self) -> int:
        """The slices ``gather`` takes one at a time to copy the view out: its time."""
        size, stride = _squeezed(self.size, self.stride)
        if 0 in size or is_contiguous(size, stride):
            return 1
        n = 1
        for s in size[:-1]:
            n *= s
        return n

    def materialise(self) -> RawTensor:
        st = self.storage
        return RawTensor(st.dtype, self.size, gather(st, self.offset, self.size, self.stride))


class _Global(_Frozen):
    """An allowed global as this load hands it to the pickle: callable, nothing else."""

    __slots__ = ("_name", "_fn")

    def __init__(self, name: str, fn):
        self._init(_name=name, _fn=fn)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise ScellisError(f"{self._name} was called with keyword arguments")
        return self._fn(*args)


def _ints(v, what: str) -> tuple:
    if not isinstance(v, tuple) or not all(type(x) is int for x in v):
        raise ScellisError(f"_rebuild_tensor_v2: {what} must be a tuple of ints, got {brief(v)}")
    return v


def gather(st: Storage, offset: int, size: tuple, stride: tuple) -> bytes:
    """The C-order bytes of the strided view (offset, size, stride) of ``st``, checked."""
    isz = ITEMSIZE[st.dtype][0]
    n = 1
    for s in size:
        n *= s
    if n == 0:
        return b""
    _inside(st, offset, size, stride)
    size, stride = _squeezed(size, stride)
    mv = memoryview(st.data)
    if not size:
        return bytes(mv[offset * isz : (offset + 1) * isz])
    if is_contiguous(size, stride):  # C order: one slice
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


def _squeezed(size: tuple, stride: tuple) -> tuple[tuple, tuple]:
    """``size`` and ``stride`` without their length-1 dimensions, which address nothing:
    a column ``(n, 1)`` is then copied as one strided slice, not ``n`` slices."""
    kept = [(s, t) for s, t in zip(size, stride) if s != 1]
    return tuple(s for s, _ in kept), tuple(t for _, t in kept)


def _inside(st: Storage, offset: int, size: tuple, stride: tuple) -> None:
    last = offset + sum((s - 1) * t for s, t in zip(size, stride))
    if offset < 0 or last >= st.numel:
        raise ScellisError(
            f"a tensor view (offset {offset}, size {list(size)}, stride {list(stride)}) "
            f"reaches element {last} of storage {brief(st.key)}, which holds {st.numel}"
        )


def _hooks_ok(hooks) -> None:
    if hooks is not None and not (isinstance(hooks, dict) and not hooks):
        raise ScellisError("a tensor in the file carries backward hooks; refused")


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, hooks=None,
                       metadata=None):  # fmt: skip
    if not isinstance(storage, Storage):
        raise ScellisError(f"_rebuild_tensor_v2 got {type(storage).__name__}, not a storage")
    if type(storage_offset) is not int:
        raise ScellisError("_rebuild_tensor_v2: the storage offset must be an int")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride) or any(s < 0 for s in size) or any(t < 0 for t in stride):
        raise ScellisError(f"_rebuild_tensor_v2: bad size {brief(size)} / stride {brief(stride)}")
    if len(size) > MAX_DIMS:
        raise ScellisError(f"_rebuild_tensor_v2: {len(size)} dimensions (at most {MAX_DIMS})")
    if not isinstance(requires_grad, bool):
        raise ScellisError("_rebuild_tensor_v2: requires_grad must be a bool")
    _hooks_ok(hooks)
    if metadata is not None and not isinstance(metadata, dict):
        raise ScellisError("_rebuild_tensor_v2: metadata must be a dict")
    if 0 not in size:
        _inside(storage, storage_offset, size, stride)
    return View(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad=True, hooks=None, state=None):
    if not isinstance(data, View):
        raise ScellisError(f"_rebuild_parameter got {type(data).__name__}, not a tensor")
    if not isinstance(requires_grad, bool):
        raise ScellisError("_rebuild_parameter: requires_grad must be a bool")
    _hooks_ok(hooks)
    if state is not None and not isinstance(state, dict):
        raise ScellisError("_rebuild_parameter_with_state: the state must be a dict")
    return data


def _ordered_dict(*args):
    if args and not (len(args) == 1 and isinstance(args[0], (list, tuple))):
        raise ScellisError("OrderedDict was called with unexpected arguments")
    if args and not all(isinstance(p, tuple) and len(p) == 2 for p in args[0]):
        raise ScellisError("OrderedDict was called with something other than pairs")
    for p in args[0] if args else ():
        _check_key(p[0], "OrderedDict")
    return OrderedDict(*args)


_FUNCTIONS = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): _ordered_dict,
}
_TYPES = {("torch", n): (n, code) for n, code in _STORAGES.items()}
_TYPES[("torch", "UntypedStorage")] = ("UntypedStorage", "U8")
_TYPES[("torch.storage", "UntypedStorage")] = ("UntypedStorage", "U8")
ALLOWED = frozenset(_FUNCTIONS) | frozenset(_TYPES)


def _refuse_extension(self):
    raise ScellisError("the pickle uses an extension code (refused: not in torch's format)")


class RestrictedUnpickler(pickle._Unpickler):
    """Unpickles ``data.pkl``; ``load_storage(key)`` gives a storage's bytes.

    The pure-Python unpickler, so that BUILD and the extension opcodes can be replaced;
    a state dict's pickle is structure only, small beside its storages.
    """

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data: bytes, load_storage, where: str):
        super().__init__(io.BytesIO(data), encoding="utf-8")  # as torch.load reads strings
        self._load_storage = load_storage
        self._where = where
        self._storages: dict[str, Storage] = {}

    def find_class(self, module: str, name: str):
        key = (module, name)
        if key in _FUNCTIONS:
            return _Global(f"{module}.{name}", _FUNCTIONS[key])
        if key in _TYPES:
            return StorageType(*_TYPES[key])
        raise ScellisError(
            f"{self._where}: refused global {shown(module)}.{shown(name)} (only tensor and storage "
            "rebuilding is allowed in a state dict)"
        )

    def load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        # torch.save emits BUILD for one thing: the _metadata a module's state_dict()
        # hangs on its OrderedDict. Module versions are of no use here: dropped.
        if type(inst) is OrderedDict and type(state) is dict:
            return
        raise ScellisError(
            f"{self._where}: the pickle sets state on a {type(inst).__name__} "
            "(torch's format does that only for a state dict's metadata)"
        )

    dispatch[pickle.BUILD[0]] = load_build

    # Every opcode that hashes what the pickle built checks it first (``_check_key``).
    # After a MARK the items since it are ``self.stack``: keys at even places.
    def load_setitem(self):
        _check_key(self.stack[-2], self._where)
        super().load_setitem()

    def load_setitems(self):
        for k in self.stack[0::2]:
            _check_key(k, self._where)
        super().load_setitems()

    def load_dict(self):
        for k in self.stack[0::2]:
            _check_key(k, self._where)
        super().load_dict()

    def load_additems(self):
        for k in self.stack:
            _check_key(k, self._where)
        super().load_additems()

    def load_frozenset(self):
        for k in self.stack:
            _check_key(k, self._where)
        super().load_frozenset()

    for _op, _fn in ((pickle.SETITEM, load_setitem), (pickle.SETITEMS, load_setitems),
                     (pickle.DICT, load_dict), (pickle.ADDITEMS, load_additems),
                     (pickle.FROZENSET, load_frozenset)):  # fmt: skip
        dispatch[_op[0]] = _fn
    for _op in (pickle.EXT1, pickle.EXT2, pickle.EXT4):
        dispatch[_op[0]] = _refuse_extension

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ScellisError(f"{self._where}: unknown persistent id {brief(pid)}")
        _, kind, key, _location, count = pid
        if not isinstance(kind, StorageType) or not isinstance(key, str) or type(count) is not int:
            raise ScellisError(f"{self._where}: malformed storage reference {brief(pid)}")
        st = self._storages.get(key)
        if st is None:
            data = self._load_storage(key)
            st = Storage(key, kind.dtype, data)
            # typed storages count elements, untyped ones bytes: both must cover the member
            if count < 0 or count * ITEMSIZE[kind.dtype][0] != len(data):
                raise ScellisError(
                    f"{self._where}: storage {brief(key)} claims {count} {kind.dtype} elements "
                    f"but its member holds {len(data)} bytes"
                )
            self._storages[key] = st
        elif st.dtype != kind.dtype:
            raise ScellisError(f"{self._where}: storage {brief(key)} is read as two dtypes")
        return st

    def run(self):
        try:
            return self.load()
        except ScellisError as e:
            if str(e).startswith(self._where):
                raise
            raise ScellisError(f"{self._where}: {e}") from None
        except RecursionError:
            raise ScellisError(f"{self._where}: the pickle nests too deeply") from None
        except MemoryError:
            raise ScellisError(f"{self._where}: the pickle asks for too much memory") from None
        except Exception as e:  # every malformed stream is the file's fault
            what = f"{type(e).__name__}: {e}"
            raise ScellisError(f"{self._where}: bad pickle data ({what:.200})") from None
