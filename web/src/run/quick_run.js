// The first run of each example is a quick one: a minute or a few on a software GPU
// (SwiftShader), a loss point from the first step and a validation point early. The
// char Transformer's steps and its full validation split cost several times the LSTM's,
// so it takes fewer steps and validates on its first rows. Any other record keeps the
// panel's defaults.
const QUICK = {
  lstm_forecaster: { max_steps: 60, eval_every: 10, log_every: 1, val_rows: "" },
  char_transformer: { max_steps: 15, eval_every: 5, log_every: 1, val_rows: 32 },
};

// set the run-option controls under `root` to the example's quick run, if it has one
export function applyQuickRun(root, example) {
  const quick = QUICK[example];
  if (!quick) return;
  for (const [name, value] of Object.entries(quick)) {
    const input = root.querySelector(`[data-option="${name}"]`);
    if (input) input.value = String(value);
  }
}
