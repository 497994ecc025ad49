# An LSTM forecaster for yearly sunspot numbers: 20 past years in, the next year out.
# The same model as scellis.model.zoo.LSTMForecaster and the `forecast` recipe.
model: examples/lstm_forecaster@1

inputs:
  window: { shape: [batch, 20, 1], dtype: f32 }   # [B, T, F]: one series, 20 steps

blocks:
  lstm:
    block_id: nn/lstm
    in: window
    input_size: 1
    hidden_size: 32
    output: last        # keep only the last step: [B, 32]
  head:
    block_id: nn/regression_head
    in: lstm
    in_features: 32
    n_outputs: 1        # one year ahead

outputs: [head]

# the training pipeline travels with the model
optimizer: { block_id: training/optimizer/adam, lr: 0.01 }
loss:      { block_id: training/loss/mse }
epochs: 60
batch_size: 32
determinism_tier: debug   # debug | prod | fast: never silently defaulted
seed: 0

data:
  source: bundled:sunspots_yearly.csv
  format: csv
  column: sunspots
  window: 20            # input length in years
  horizon: 1
  stride: 1
  val_fraction: 0.2     # the last 20% of years, in time order
  normalise: standard   # fitted on the training split only

eval: { every: 40, batch_size: 64, metrics: [mae, rmse, smape] }   # every 40 steps, in sunspots
