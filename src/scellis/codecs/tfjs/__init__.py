"""TensorFlow.js Layers models (codecs layer): ``model.json`` with its weight shards in.

``codec`` is the catalog entry; ``manifest`` reads the weights manifest's shards
(float32, or uint8/uint16/float16-quantised, dequantised as TF.js does); ``topology``
walks the Keras model config (Sequential or functional) into layers in order; ``layers``
maps each layer class onto catalog blocks and its Keras-laid-out weights onto torch's.
"""

from . import codec  # noqa: F401  (registers codec/tfjs)
