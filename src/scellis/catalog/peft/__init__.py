"""Parameter-efficient fine-tuning (catalog layer): freezing, head swaps and adapters.

Adapters are catalog entries of kind ``peft`` (a Config and a function that attaches
it to a built model), registered through the same ``register`` a user's own takes:
``peft/lora`` and ``peft/dora`` (lowered with the op graph), ``peft/prefix`` and
``peft/prompt`` (eager path). ``apply_finetune`` applies a record's ``finetune:``
section; ``merge_lora`` folds LoRA-family adapters back into dense weights for export;
``quantize_base`` stores the frozen dense weights as int8 or NF4 codes (QLoRA).
"""

from ..registry import register
from .freeze import freeze, frozen, set_trainable, swap_head, trainable, unfreeze
from .lora import DoRAConfig, DoRALinear, LoRAConfig, LoRALinear, apply_lora, merge_lora
from .plan import FinetunePlan, adapters_of, apply_adapter, apply_finetune, describe
from .prefix import (
    PrefixAttention,
    PrefixConfig,
    PromptConfig,
    PromptEmbedding,
    apply_prefix,
    apply_prompt,
)
from .quant import QuantLinear
from .quantize import quantize_base, quantized_bytes

for _id, _cfg, _impl in (
    ("peft/lora", LoRAConfig, apply_lora),
    ("peft/dora", DoRAConfig, apply_lora),
    ("peft/prefix", PrefixConfig, apply_prefix),
    ("peft/prompt", PromptConfig, apply_prompt),
):
    register(_id, "peft", _cfg, _impl, builtin=True)

__all__ = [
    "DoRAConfig",
    "DoRALinear",
    "FinetunePlan",
    "LoRAConfig",
    "LoRALinear",
    "PrefixAttention",
    "PrefixConfig",
    "PromptConfig",
    "PromptEmbedding",
    "QuantLinear",
    "adapters_of",
    "apply_adapter",
    "apply_finetune",
    "apply_lora",
    "apply_prefix",
    "apply_prompt",
    "describe",
    "freeze",
    "frozen",
    "merge_lora",
    "quantize_base",
    "quantized_bytes",
    "set_trainable",
    "swap_head",
    "trainable",
    "unfreeze",
]
