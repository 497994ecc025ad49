# One wide linear layer: its weight is 12288 x 4096 f32 (192 MiB), for the binding-limit checks.
model: tests/wide12288@1

inputs:
  x: { shape: [batch, 4096], dtype: f32 }

blocks:
  fc:
    block_id: nn/linear
    in: x
    in_features: 4096
    out_features: 12288

outputs: [fc]

optimizer: { block_id: training/optimizer/sgd, lr: 0.01 }
loss:      { block_id: training/loss/mse }
epochs: 1
batch_size: 2
determinism_tier: debug
seed: 0
