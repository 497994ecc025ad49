# Two dense layers (~100k parameters), Adam and norm clipping: a traced training step's
# optimizer phase (the finite flag, clipping, the gathered gradients).
model: tests/dense2_clip@1

inputs:
  x: { shape: [batch, 64], dtype: f32 }

blocks:
  h: { block_id: nn/linear, in: x, in_features: 64, out_features: 1024 }
  y: { block_id: nn/linear, in: h, in_features: 1024, out_features: 32 }

outputs: [y]

optimizer: { block_id: training/optimizer/adam, lr: 0.001 }
loss:      { block_id: training/loss/mse }
epochs: 1
batch_size: 4
grad_clip: { max_norm: 1.0 }
determinism_tier: debug
