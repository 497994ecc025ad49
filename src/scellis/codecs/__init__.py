"""Import/export codecs (codecs layer): safetensors, PyTorch state dicts, ONNX.

One subpackage per format (``onnx``, ``torch``, ``safetensors``, ``hf`` (Hugging Face
model folders), ``tfjs`` (TensorFlow.js Layers models), and ``protobuf``, the
wire format ONNX files use); the modules here are format-agnostic: the codec base and
lookup, host tensors, records as text, weights onto models, whole-file conversion.
Importing this package registers the built-in ``codec/*`` catalog entries; a user's
codec registers through ``scellis.catalog.register(id, "codec", Config, Impl)`` the same
way. Everything here is pure Python (no NumPy, torch or onnx), so it runs in the browser.
"""

from . import hf, onnx, safetensors, tfjs, torch  # noqa: F401  (registers the built-in codecs)
from .base import Codec, Imported, find, make, read  # noqa: F401
from .raw import RawTensor  # noqa: F401
