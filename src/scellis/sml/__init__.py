"""SML, the Scellis Model Language (sml layer): the model record as text, pure data.

``parse`` reads a document (YAML 1.2 through ruamel.yaml, with guards), ``validate``
checks it against a registry passed in (this package never imports the catalog),
``emit`` writes it back, and ``to_graph`` / ``to_form`` are Model View's other two
projections. Imports only ``scellis.base``.
"""

from .document import Document, emit, parse, render
from .projections import to_form, to_graph
from .registry import FieldInfo, Registry, ShapeMismatch
from .schema import TIERS
from .validate import validate

__all__ = [
    "Document", "FieldInfo", "Registry", "ShapeMismatch", "TIERS",
    "emit", "parse", "render", "to_form", "to_graph", "validate",
]  # fmt: skip
