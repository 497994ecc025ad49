"""Scellis: train neural networks on your own GPU, natively or in a browser tab.

The public surface; everything here is a re-export. Only the dtypes, the errors and the
version load with the package: every other name loads its module the first time it is
read, so ``import scellis`` (and the command line, which sits under it) starts at once
rather than after the whole engine has loaded.
"""

from importlib import import_module

from .base.dtypes import bool_, f16, f32, f64, i32, u32  # noqa: F401
from .base.dtypes import bool_ as bool  # noqa: F401, A004 (torch's names for the dtypes)
from .base.dtypes import f16 as float16  # noqa: F401
from .base.dtypes import f16 as half  # noqa: F401
from .base.dtypes import f32 as float  # noqa: F401, A004
from .base.dtypes import f32 as float32  # noqa: F401
from .base.dtypes import f64 as double  # noqa: F401
from .base.dtypes import f64 as float64  # noqa: F401
from .base.dtypes import i32 as int  # noqa: F401, A004
from .base.dtypes import i32 as int32  # noqa: F401
from .base.errors import ScellisError, ShapeError  # noqa: F401
from .version import __version__  # noqa: F401

# the subpackages, as attributes without an import of their own (``sc.sml.parse``)
_SUBMODULES = (
    "amp", "autograd", "base", "catalog", "codecs", "cuda", "data", "devices", "ir", "model",
    "nn", "ops", "optim", "rng", "run", "runtime", "sml", "store", "train",
    "backends", "distributions", "linalg", "testing", "utils",
)  # fmt: skip

# torch's numeric constants (``torch.inf``, ``torch.pi``...)
inf, nan, pi, e = 1e999, 1e999 - 1e999, 3.141592653589793, 2.718281828459045
newaxis = None

# name -> (module, attribute there); an empty attribute is the module itself
_LAZY = {
    **{name: (f".{name}", "") for name in _SUBMODULES},
    **{name: (".autograd", name) for name in (
        "enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled")},
    "autocast": (".catalog.module_precision", "autocast"),
    "save": (".codecs.state_file", "save"),
    "list_adapters": (".devices.adapters", "list_adapters"),
    "device": (".devices.base", "device"),
    "load": (".run.loading", "load"),
    "train_record": (".run.loading", "train_record"),
    "reproduce": (".run.reproduce", "reproduce"),
    "read_link": (".run.share", "read_link"),
    "share": (".run.share", "share"),
    "functional": (".runtime.functional", ""),
    **{name: (".runtime", name) for name in (
        "Tensor", "default_device", "set_default_device", "tensor")},
    **{name: (".runtime.creation", name) for name in ("from_bytes", "generator", "manual_seed")},
    **{name: (".runtime.factories", name) for name in (
        "arange", "as_tensor", "empty", "eye", "from_numpy", "full", "full_like", "linspace",
        "ones", "ones_like", "rand", "rand_like", "randint", "randn", "randn_like", "zeros",
        "zeros_like")},
    **{name: (".runtime.functional", name) for name in ("cat", "stack", "where")},
    "compile": (".train.compiled", "compile"),  # torch's name
    **{name: (".settings", name) for name in (
        "set_num_threads", "get_num_threads", "set_num_interop_threads",
        "get_num_interop_threads", "get_default_dtype", "set_default_dtype",
        "set_printoptions", "use_deterministic_algorithms",
        "are_deterministic_algorithms_enabled", "set_float32_matmul_precision",
        "get_float32_matmul_precision")},
    "finfo": (".dtype_info", "finfo"),
    "dtype": (".base.dtypes", "DType"),
    **{name: (".compat", name) for name in (
        "Size", "FloatTensor", "DoubleTensor", "HalfTensor", "IntTensor", "LongTensor",
        "BoolTensor", "initial_seed", "seed", "get_rng_state", "set_rng_state", "jit")},
    "iinfo": (".dtype_info", "iinfo"),
    # torch's top-level twins of nn.functional's
    **{name: (".nn.functional", name) for name in ("cosine_similarity", "pairwise_distance")},
}  # fmt: skip

# torch's integer dtypes the engine lacks: each is i32 here (said once, as for int64)
_NARROWED = ("int64", "long", "int16", "short", "int8", "uint8")
# torch's dtypes with no stand-in: naming one says what to use instead
_MISSING_DTYPES = {
    "bfloat16": "float16 (or float32)", "complex64": "two float32 tensors",
    "complex128": "two float64 tensors", "cfloat": "two float32 tensors",
    **dict.fromkeys(("lgamma", "digamma", "polygamma", "erfinv", "special"),
                    "the host's math module over t.tolist() (no kernel for it here)"),
    "fft": "no FFT kernels: a real matmul by a DFT matrix, or NumPy on t.numpy()",
    "sparse": "dense tensors (no sparse layouts here)",
    "complex": "two real tensors (no complex dtypes here)",
    **dict.fromkeys(("inverse", "det", "logdet", "slogdet", "pinverse", "svd", "cholesky",
                     "qr", "lu", "eig", "matrix_exp", "lstsq", "triangular_solve"),
                    "NumPy's np.linalg on t.numpy() (no matrix decompositions here)"),
}  # fmt: skip

# torch's free functions (``scellis.exp(x)``...): the names that module exports
_TORCH_FUNCTIONS = ".runtime.torch_functions"


def _torch_function_names() -> list[str]:
    return list(import_module(_TORCH_FUNCTIONS, __name__).__all__)


def __getattr__(name: str):
    """A public name, loaded from its module on first use and kept; torch's 64-bit
    integer names are i32 here, with one warning the first time."""
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = import_module(module, __name__)
        value = getattr(value, attr) if attr else value
    elif name in _NARROWED:
        from .base.dtypes import narrowed_int

        return narrowed_int(name)
    elif name in _MISSING_DTYPES:
        from .settings import UnsupportedName

        raise UnsupportedName(
            f"scellis has no {name} (no such type or op in its kernels); "
            f"use {_MISSING_DTYPES[name]}"
        )
    elif name == "__all__":
        value = sorted({*_PUBLIC, *_LAZY, *_torch_function_names()})
    elif not name.startswith("__") and name in _torch_function_names():
        value = getattr(import_module(_TORCH_FUNCTIONS, __name__), name)
    else:
        raise AttributeError(f"module 'scellis' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})


_PUBLIC = [n for n in globals() if not n.startswith("_") and n != "import_module"]
