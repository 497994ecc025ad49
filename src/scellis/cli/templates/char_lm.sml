# A starter Scellis record: a tiny character-level Transformer language model.
#   scellis validate {file}    |   scellis train {file}
model: {namespace}/{name}@1

inputs:
  ids: { shape: [batch, 32], dtype: i32 }   # a context of 32 characters

blocks:
  embed:
    block_id: nn/embedding
    in: ids
    num_embeddings: 88      # vocabulary size: the distinct characters of the text
    embedding_dim: 48
  position:
    block_id: nn/learned_position
    in: embed
    max_len: 32
    dim: 48
  decoder:
    block_id: nn/transformer
    in: position
    d_model: 48
    num_heads: 4
    num_layers: 2
    kind: decoder           # causal self-attention
  head:
    block_id: nn/lm_head
    in: decoder
    d_model: 48
    vocab_size: 88

outputs: [head]

optimizer: { block_id: training/optimizer/adamw, lr: 3.0e-3, weight_decay: 0.01 }
loss:      { block_id: training/loss/cross_entropy }
epochs: 1
batch_size: 16
grad_clip: { max_norm: 1.0 }
determinism_tier: debug
seed: 1

data:
  source: bundled:python_help_topics.txt   # or a .txt path relative to this file
  format: text
  tokenizer: char
  context: 32
  stride: 16
  max_chars: 60000
  val_fraction: 0.1
