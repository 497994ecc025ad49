// The first run of each example is a quick one, sized to the user's GPU: its step count
// is the target time (about 45 s) over the measured time of one training step. The
// measurement is a short calibration (two unrecorded steps: the first pays for shader
// compiles, the second is timed) the first time Train is pressed for an example, then
// the time per step of the quick run itself; both are kept per example and GPU in
// localStorage, so the next visit is sized at once. The validation cadence follows:
// about three validations a run. A "max steps" the user typed is left alone.
// The char Transformer validates on its first rows (its full split costs many steps).
const CADENCE = {
  lstm_forecaster: { log_every: 1, val_rows: "" },
  tcn_forecaster: { log_every: 1, val_rows: "" },
  char_transformer: { log_every: 1, val_rows: 32 },
};
// before any measurement: what a software GPU (SwiftShader) manages in a minute or few
const FALLBACK = { lstm_forecaster: 60, tcn_forecaster: 60, char_transformer: 15 };
const KEY = "scellis-speed:";

export function createQuickRun({ root, client, app, hint }) {
  // per_step: the speed the run is sized by; timed: the last calibration's step
  const state = { target_s: 45, example: null, per_step: null, timed: null, steps: null, device: "", busy: false };
  app.quickRun = state;
  const input = (name) => root.querySelector(`[data-option="${name}"]`);
  const key = () => `${KEY}${state.example}:${state.device}`;
  const plain = hint.textContent; // the page's own line, for a record sized by no quick run

  function remembered() {
    const v = Number(window.localStorage.getItem(key()));
    return v > 0 ? v : null;
  }
  function remember(perStep) {
    state.per_step = perStep;
    try { window.localStorage.setItem(key(), String(perStep)); } catch (e) { /* kept for this page */ }
  }

  // set the run controls to the sized quick run and say what it will take
  function size(perStep) {
    state.per_step = perStep;
    const steps = Math.max(3, Math.min(2000, Math.round(state.target_s / perStep)));
    state.steps = steps;
    input("max_steps").value = String(steps);
    input("eval_every").value = String(Math.max(1, Math.round(steps / 3)));
    const secs = Math.round(steps * perStep);
    hint.textContent = `quick run: ~${steps} steps ≈ ${secs} s on this GPU ` +
      `(${perStep < 1 ? `${Math.round(perStep * 1000)} ms` : `${perStep.toFixed(1)} s`} a step); ` +
      "clear “max steps” for the record's full length";
  }

  // the example's quick run: sized at once when this GPU's speed is known
  function apply(example) {
    state.example = example;
    state.steps = null;
    state.per_step = null;
    const cadence = CADENCE[example];
    if (!cadence) { hint.textContent = plain; return; }
    for (const [name, value] of Object.entries(cadence)) {
      const i = input(name);
      if (i) i.value = String(value);
    }
    const known = state.device && remembered();
    if (known) { size(known); return; }
    state.steps = FALLBACK[example];
    input("max_steps").value = String(state.steps);
    input("eval_every").value = String(Math.max(1, Math.round(state.steps / 6)));
    hint.textContent = `quick run of about ${state.target_s} s: Train first times two steps ` +
      "on this GPU to size it; clear “max steps” for the record's full length";
  }

  // still the quick run: the user has not typed another max steps
  const untouched = () => state.steps !== null && input("max_steps").value === String(state.steps);

  // before Train: time two unrecorded steps of the record when the speed is not known yet
  async function ready(log) {
    if (!CADENCE[state.example] || state.per_step !== null || !untouched()) return;
    state.busy = true;
    const before = hint.textContent; // back once the measurement is over, however it ends
    hint.textContent = "measuring this GPU's speed (two steps)…";
    const times = [];
    try {
      await client.stream("train", {
        record_text: app.record, max_steps: 2, log_every: 1, validate: false, samples: false,
      }, (ev) => { if (ev.kind === "log") times.push(performance.now()); });
    } finally {
      state.busy = false;
      hint.textContent = before;
    }
    if (times.length < 2) return;
    const perStep = (times[1] - times[0]) / 1000;
    state.timed = perStep;
    remember(perStep);
    size(perStep);
    log(`timed one step at ${(perStep * 1000).toFixed(0)} ms: a quick run of ${state.steps} steps`);
  }

  // after a quick run: its own time per step (validations included) sizes the next one
  function learn(end) {
    if (!end || end.stopped_by_user || !state.steps || end.steps !== state.steps) return;
    remember(end.wall_s / end.steps);
  }

  app.on("engine", (hello) => {
    state.device = (hello && hello.device) || "";
    if (state.example) apply(state.example);
  });
  return { apply, ready, learn, state };
}
