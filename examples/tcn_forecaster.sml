# A temporal convolutional network forecasting yearly sunspot numbers: 30 past years in,
# the next year out. Causal dilated convs (dilations 1, 2, 4) see 29 years per output step;
# the head reads the last step, which has seen the whole window and nothing after it.
model: examples/tcn_forecaster@1

inputs:
  window: { shape: [batch, 30, 1], dtype: f32 }   # [B, T, C]: one series, 30 steps

blocks:
  tcn:
    block_id: nn/tcn
    in: window
    in_channels: 1
    channels: 16        # [B, 30, 16]: every residual block keeps the length
    num_blocks: 3       # dilations 1, 2, 4
    kernel_size: 3
    dropout: 0.1
  head:
    block_id: nn/regression_head
    in: tcn
    in_features: 16
    pool: last          # the last step: [B, 16]
    n_outputs: 1        # one year ahead

outputs: [head]

# the training pipeline travels with the model
optimizer: { block_id: training/optimizer/adam, lr: 0.003 }
loss:      { block_id: training/loss/mse }
epochs: 40
batch_size: 32
determinism_tier: debug   # debug | prod | fast: never silently defaulted
seed: 0

data:
  source: bundled:sunspots_yearly.csv
  format: csv
  column: sunspots
  window: 30            # input length in years
  horizon: 1
  stride: 1
  val_fraction: 0.2     # the last 20% of years, in time order
  normalise: standard   # fitted on the training split only

eval: { every: 40, batch_size: 64, metrics: [mae, rmse, smape] }   # every 40 steps, in sunspots
