"""Public face of the Philox RNG: ``scellis.rng.philox4x32`` and the named streams."""

from .base.rng import (  # noqa: F401
    Generator,
    bernoulli,
    counter_words,
    keep_threshold,
    philox4x32,
    raw_u32,
    stream_key,
    u32_to_uniform,
    uniform,
)
