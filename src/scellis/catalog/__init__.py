"""The catalog (catalog layer): blocks, optimizers, schedulers, losses, metrics, codecs, peft.

Every entry is a Config dataclass (its schema: fields, types, defaults, ranges, docs)
plus an implementation, registered through ``register`` — the same public path a
user's own entries take.
"""

# importing the built-in blocks registers the nn/* ids; the training/* ids likewise
from . import blocks, clip, losses, metrics, optim, peft, sched  # noqa: F401
from .registry import Entry, FieldSpec, entries, field, lookup, register, schema  # noqa: F401
