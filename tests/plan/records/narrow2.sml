# One 2 -> 2 linear layer at a large batch: LoRA's rank-8 activations outweigh the weights.
model: tests/narrow@1

inputs:
  x: { shape: [batch, 2], dtype: f32 }

blocks:
  fc:
    block_id: nn/linear
    in: x
    in_features: 2
    out_features: 2

outputs: [fc]

optimizer: { block_id: training/optimizer/adam, lr: 0.01 }
loss:      { block_id: training/loss/mse }
epochs: 1
batch_size: 4096
seed: 0
determinism_tier: debug
