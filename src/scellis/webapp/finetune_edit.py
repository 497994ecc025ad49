"""The tab's fine-tune choice (webapp layer): every weight, LoRA, or QLoRA, as the
record's ``finetune:`` section.

The import strip offers the choice once a model is shown; Model View sends it as the
edit ``{kind: finetune, method, rank}`` and the section is written into the record's
text (comments and the rest of the text kept), so the code view shows exactly what
will train. ``summary`` reads a record's section back into the same terms, so the
control shows what the record says even after the user edits the section by hand.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..sml import Document

# method -> the base's storage under the adapters (None: f32); "full" has no section
QUANTIZE = {"lora": None, "qlora": "nf4", "qlora-int8": "int8"}
METHODS = ("full", *QUANTIZE)
DEFAULT_RANK = 8
MAX_RANK = 256
NOTE = "# LoRA on every dense block, the pre-trained weights frozen (the tab's fine-tune choice)"


def section(method: str, rank: int) -> dict | None:
    """The ``finetune:`` mapping of a choice (None for every weight)."""
    if method not in METHODS:
        raise ScellisError(f"fine-tune method {method!r}: one of {', '.join(METHODS)}")
    if method == "full":
        return None
    if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= MAX_RANK:
        raise ScellisError(f"LoRA rank must be a whole number from 1 to {MAX_RANK}, got {rank!r}")
    # alpha = 2 * rank: the adapters' update scale (alpha / rank) stays 2 whatever the rank
    lora = {"block_id": "peft/lora", "target_modules": "*", "rank": rank, "alpha": 2.0 * rank}
    out: dict = {"adapters": [lora]}
    if QUANTIZE[method]:
        out["quantize_base"] = QUANTIZE[method]
    return out


def apply(doc: Document, edit: dict) -> None:
    """Write (or, for every weight, remove) the record's ``finetune:`` section."""
    new = section(edit.get("method"), edit.get("rank", DEFAULT_RANK))
    if new is None:
        doc.remove_section("finetune")
    else:
        doc.add_section("finetune", new, NOTE)


def summary(data: dict) -> dict:
    """``{method, rank}`` of a record's section in the choice's terms (``custom`` when
    the section says more than the choice can: other adapters, patterns, heads)."""
    sec = data.get("finetune")
    if not sec:
        return {"method": "full", "rank": DEFAULT_RANK}
    adapters = sec.get("adapters") if isinstance(sec, dict) else None
    one = adapters[0] if isinstance(adapters, list) and len(adapters) == 1 else None
    q = sec.get("quantize_base") if isinstance(sec, dict) else None
    fmt = q.get("format", "nf4") if isinstance(q, dict) else q
    method = next((m for m, f in QUANTIZE.items() if f == fmt), None)
    plain = isinstance(one, dict) and one.get("block_id") == "peft/lora"
    if not plain or method is None or set(sec) - {"adapters", "quantize_base"}:
        return {"method": "custom", "rank": DEFAULT_RANK}
    rank = one.get("rank", DEFAULT_RANK)
    return {"method": method, "rank": rank if isinstance(rank, int) else DEFAULT_RANK}
