"""Import/export codecs: safetensors, PyTorch state dicts, ONNX (codecs layer)."""
