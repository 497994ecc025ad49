"""ONNX models (codecs layer): the importer onto catalog blocks, and the exporter.

``importer`` runs a graph abstractly (``values``), node by node through the rules of
``ops``, folding constants and shapes (``fold``) and matching attention and transformer
layers (``attn``); ``proto`` reads the messages, ``exporter`` writes them.
"""

from . import exporter, importer  # noqa: F401  (registers codec/onnx_export and codec/onnx)
