# The scale-out model: a 12-layer, 12-head d768 character decoder (GPT-2 small sized
# body, about 85M parameters), context 512, batch 32; bench/torch_train.py times it
# under torchrun on 1, 2, 4 and 8 GPUs.

model: bench/tf_d768@1

inputs:
  ids: { shape: [batch, 512], dtype: i32 }   # token ids, a context of 512 characters

blocks:
  tok:
    block_id: nn/embedding
    in: ids
    num_embeddings: 88    # the distinct characters of the first 60,000 of the text
    embedding_dim: 768
  pos:
    block_id: nn/learned_position
    in: tok
    max_len: 512
    dim: 768
    std: 0.02
  body:
    block_id: nn/transformer
    in: pos
    d_model: 768
    num_heads: 12
    num_layers: 12
    kind: decoder         # causal self-attention, pre-norm, final norm
  head:
    block_id: nn/lm_head
    in: body
    d_model: 768
    vocab_size: 88        # next-token logits [B, T, 88]

outputs: [head]

optimizer: { block_id: training/optimizer/adamw, lr: 3.0e-4, weight_decay: 0.01 }
loss:      { block_id: training/loss/cross_entropy }
epochs: 50            # about 7 batches an epoch: enough steps for a steady timing
batch_size: 32
grad_clip: { max_norm: 1.0 }
determinism_tier: debug
seed: 0

data:
  source: bundled:python_help_topics.txt
  format: text
  tokenizer: char
  context: 512
  stride: 256
  max_chars: 60000
  val_fraction: 0.1

eval: { metrics: [accuracy, perplexity, bits_per_char] }   # beside the unigram model's
