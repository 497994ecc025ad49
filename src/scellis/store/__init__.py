"""Objects, safetensors, checkpoint manifests, SQLite records (store layer: bytes only)."""
