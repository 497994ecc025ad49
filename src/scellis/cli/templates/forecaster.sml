# A starter Scellis record: a small LSTM that forecasts a univariate series.
# Every run-defining setting lives here, so this file is the whole experiment.
#   scellis validate {file}        check it (file:line:col for any problem)
#   scellis catalog --kind block   the blocks you can use, with their fields
#   scellis train {file}           train it (--device auto|webgpu|reference)
model: {namespace}/{name}@1       # namespace/name@version; `scellis models save` bumps it

inputs:
  window: { shape: [batch, 24, 1], dtype: f32 }   # [batch, time steps, features]

blocks:
  encoder:
    block_id: nn/lstm
    in: window
    input_size: 1
    hidden_size: 32
    output: last            # only the final step's state goes on: [batch, 32]
  head:
    block_id: nn/regression_head
    in: encoder
    in_features: 32         # must equal the encoder's hidden_size
    n_outputs: 1            # predict one step ahead

outputs: [head]

# -- how it trains ---------------------------------------------------------------
optimizer: { block_id: training/optimizer/adam, lr: 0.005 }
scheduler: { block_id: training/scheduler/cosine, t_max: 140 }   # ~ epochs x batches per epoch
loss:      { block_id: training/loss/mse }
epochs: 20
batch_size: 32
grad_clip: { max_norm: 1.0 }
precision: f32              # or mixed_f16 where the GPU has shader-f16
determinism_tier: debug     # debug (bitwise repeatable) | prod | fast
seed: 1

# -- what it trains on: replace the source with your own CSV -------------------------
data:
  source: bundled:sunspots_yearly.csv   # or a path relative to this file
  format: csv
  column: sunspots          # the value column
  window: 24                # input length; must match inputs.window's time steps
  horizon: 1
  stride: 1
  val_fraction: 0.2         # the most recent 20%, never shuffled into training
  normalise: change         # each window framed by its own last value and step size:
                            # the network predicts the change, so a trend carries on
                            # (window: by its mean and spread; standard: one scale
                            # from the training split, for a level that never drifts)

eval: { every: 1, batch_size: 64, metrics: [mae] }
