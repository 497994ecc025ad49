"""Foundation layer: dtypes, shapes, errors, hashing and the Philox RNG (pure Python)."""
