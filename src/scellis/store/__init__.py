"""Content-addressed objects, safetensors, checkpoint manifests and SQLite records (store layer: bytes, not tensors)."""
