"""One ONNX operator as a block (catalog layer): what an imported graph keeps where no
catalog block matches. See ``block`` for the record form, ``ops`` for the operators."""

from . import block  # noqa: F401
