# The 2x256 LSTM profiling model: hidden 256, two layers, windows of 64, batch 128.
# Used by `scellis profile` on a real GPU.
model: bench/lstm2x256@1

inputs:
  window: { shape: [batch, 64, 1], dtype: f32 }   # [B, T, F]: one series, 64 steps

blocks:
  lstm:
    block_id: nn/lstm
    in: window
    input_size: 1
    hidden_size: 256
    num_layers: 2
    output: last        # keep only the last step: [B, 256]
  head:
    block_id: nn/regression_head
    in: lstm
    in_features: 256
    n_outputs: 1        # one step ahead

outputs: [head]

# the training pipeline travels with the model
optimizer: { block_id: training/optimizer/adam, lr: 0.01 }
loss:      { block_id: training/loss/mse }
epochs: 60
batch_size: 128
determinism_tier: debug   # debug | prod | fast: never silently defaulted
seed: 0

data:
  source: series.csv    # 4,000 steps of two seasonal sines plus noise
  format: csv
  column: value
  window: 64            # input length in steps
  horizon: 1
  stride: 1
  val_fraction: 0.2     # the last 20% of steps, in time order
  normalise: standard   # fitted on the training split only

eval: { every: 40, batch_size: 128, metrics: [mae, rmse] }
