"""safetensors files (codecs layer): the store's pure-Python reader/writer as a codec."""

from . import codec  # noqa: F401  (registers codec/safetensors)
