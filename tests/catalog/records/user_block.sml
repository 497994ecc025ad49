# A record that names its own catalog extension: the user's scaled_tanh block.
model: tests/user_block@1
extensions: [../user_ext/scaled_tanh.py]

inputs:
  window: { shape: [batch, 4, 1], dtype: f32 }

blocks:
  lstm:
    block_id: nn/lstm
    in: window
    input_size: 1
    hidden_size: 3
    output: last
  squash:
    block_id: user/block/scaled_tanh
    in: lstm
    features: 3
    scale: 2.0
    init_gain: 1.5
  head:
    block_id: nn/linear
    in: squash
    in_features: 3
    out_features: 1

outputs: [head]

optimizer: { block_id: training/optimizer/sgd, lr: 0.1 }
loss: { block_id: training/loss/mse }
epochs: 1
batch_size: 32
determinism_tier: debug
seed: 3

data:
  source: series.csv
  format: csv
  column: v
  window: 4
  horizon: 1
  stride: 1
  val_fraction: 0.25
  normalise: none
