# The d384 profiling model: a 6-layer, 6-head character Transformer, context 256, batch 32.
# Used by `scellis profile` and bench/step_time.py-sized runs on a real GPU.
model: bench/tf_d384@1

inputs:
  ids: { shape: [batch, 256], dtype: i32 }   # token ids, a context of 256 characters

blocks:
  tok:
    block_id: nn/embedding
    in: ids
    num_embeddings: 88    # the distinct characters of the first 60,000 of the text
    embedding_dim: 384
  pos:
    block_id: nn/learned_position
    in: tok
    max_len: 256
    dim: 384
    std: 0.02
  body:
    block_id: nn/transformer
    in: pos
    d_model: 384
    num_heads: 6
    num_layers: 6
    kind: decoder         # causal self-attention, pre-norm, final norm
  head:
    block_id: nn/lm_head
    in: body
    d_model: 384
    vocab_size: 88        # next-token logits [B, T, 88]

outputs: [head]

optimizer: { block_id: training/optimizer/adamw, lr: 3.0e-3, weight_decay: 0.01 }
loss:      { block_id: training/loss/cross_entropy }
epochs: 1
batch_size: 32
grad_clip: { max_norm: 1.0 }
determinism_tier: debug
seed: 0

data:
  source: bundled:python_help_topics.txt
  format: text
  tokenizer: char
  context: 256
  stride: 128
  max_chars: 60000
  val_fraction: 0.1

eval: { metrics: [accuracy, perplexity, bits_per_char] }   # beside the unigram model's
