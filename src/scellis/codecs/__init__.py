"""Import/export codecs (codecs layer): safetensors, PyTorch state dicts, ONNX.

Importing this package registers the built-in ``codec/*`` catalog entries; a user's
codec registers through ``scellis.catalog.register(id, "codec", Config, Impl)`` the same
way. Everything here is pure Python (no NumPy, torch or onnx), so it runs in the browser.
"""

from . import onnx_export, onnx_import, safetensors, torch_module, torch_pt  # noqa: F401
from .base import Codec, Imported, find, make, read  # noqa: F401
from .raw import RawTensor  # noqa: F401
