"""Hugging Face model folders (codecs layer): GPT-2, Llama-family and BERT configs in and out.

``codec`` is the catalog entry (a folder found by its ``config.json``); ``gpt2``,
``llama`` and ``bert`` map one family's config and tensor names onto a record and back;
``folder`` reads configs and (sharded) safetensors; ``tensors`` moves bytes between the
layouts (GPT-2's transposed ``Conv1D``, packed q/k/v).
"""

from . import codec  # noqa: F401  (registers codec/hf)
