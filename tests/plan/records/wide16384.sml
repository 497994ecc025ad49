# One wide linear layer: its weight is 16384 x 16384 f32 (1 GiB), for the binding-limit checks.
model: tests/wide16384@1

inputs:
  x: { shape: [batch, 16384], dtype: f32 }

blocks:
  fc:
    block_id: nn/linear
    in: x
    in_features: 16384
    out_features: 16384

outputs: [fc]

optimizer: { block_id: training/optimizer/sgd, lr: 0.01 }
loss:      { block_id: training/loss/mse }
epochs: 1
batch_size: 2
determinism_tier: debug
seed: 0
