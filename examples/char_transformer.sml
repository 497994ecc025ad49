# A character-level Transformer language model on the bundled Python help topics.
# The same model as scellis.model.zoo.CharTransformer and the `char_lm` recipe.
model: examples/char_transformer@1

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

optimizer: { block_id: training/optimizer/adamw, lr: 3.0e-3, weight_decay: 0.01 }
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

eval: { metrics: [accuracy, perplexity, bits_per_char] }   # beside the unigram model's
