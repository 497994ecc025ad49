"""The catalog (catalog layer): blocks, optimizers, schedulers, losses and codecs.

Every entry is a Config dataclass (its schema: fields, types, defaults, ranges, docs)
plus an implementation, registered through ``register`` — the same public path a
user's own entries take.
"""

from .registry import Entry, FieldSpec, entries, field, lookup, register, schema  # noqa: F401
