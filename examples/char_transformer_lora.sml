# LoRA fine-tuning of the character-level Transformer (examples/char_transformer.sml).
# The pre-trained weights come from `scellis import WEIGHTS --record char_transformer.sml
# --to THIS.sml`, which writes a `# weights: sha256:...` header line that `scellis train`
# loads before it applies the finetune section; without that line the model starts fresh.
model: examples/char_transformer_lora@1

inputs:
  ids: { shape: [batch, 32], dtype: i32 }   # token ids, a context of 32 characters

blocks:
  tok:
    block_id: nn/embedding
    in: ids
    num_embeddings: 88    # the distinct characters of the first 60,000 of the text
    embedding_dim: 64
  pos:
    block_id: nn/learned_position
    in: tok
    max_len: 32
    dim: 64
    std: 0.02
  body:
    block_id: nn/transformer
    in: pos
    d_model: 64
    num_heads: 4
    num_layers: 2
    kind: decoder         # causal self-attention, pre-norm, final norm
  head:
    block_id: nn/lm_head
    in: body
    d_model: 64
    vocab_size: 88        # next-token logits [B, T, 88]

outputs: [head]

finetune:
  adapters:
    # LoRA on the attention's query and value projections of every block; lowered with
    # the op graph. Only these adapters train: every pre-trained tensor is frozen.
    - { block_id: peft/lora, target_modules: [q, v], rank: 4, alpha: 8.0, dropout: 0.0 }
    # prefix tuning (eager path): 4 learned key/value vectors per attention block
    # - { block_id: peft/prefix, num_virtual_tokens: 4 }
  # freeze: ["*"]        # the default with adapters: every pre-trained parameter
  train: [body.ln_f.*]   # ...except the final norm, trained along with the adapters

optimizer: { block_id: training/optimizer/adamw, lr: 1.0e-3, weight_decay: 0.0 }
loss:      { block_id: training/loss/cross_entropy }
epochs: 1
batch_size: 16
grad_clip: { max_norm: 1.0 }
determinism_tier: debug
seed: 0

data:
  source: bundled:python_help_topics.txt
  format: text
  tokenizer: char
  context: 32
  stride: 16
  max_chars: 60000
  val_fraction: 0.1
