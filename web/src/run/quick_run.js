// The first run of each example is a quick one, sized to the user's GPU: its step count
// is the target time (about 45 s) worked back through what this GPU was measured to
// take. The measurement is a short calibration the first time Train is pressed for an
// example (seven unrecorded steps and three validations: the first step and the first
// validation pay for shader compiles, and the medians leave them out),
// then each run's own times, which replace it. Kept per example and GPU in
// localStorage, so the next visit is sized at once. What the run will take is said as
// a range around start-up + steps × (warm step + extra) + validations × one validation,
// where extra is what a recorded run spends besides (checkpoints, samples, its end),
// learnt from the last run; the run's actual duration is kept beside what was said
// (state.last) so the two can be compared.
// The validation cadence follows: about three validations a run. A "max steps" the
// user typed is left alone. The char Transformer validates on its first rows.
const CADENCE = {
  lstm_forecaster: { log_every: 1, val_rows: "" },
  tcn_forecaster: { log_every: 1, val_rows: "" },
  char_transformer: { log_every: 1, val_rows: 32 },
};
// before any measurement: what a software GPU (SwiftShader) manages in a minute or few
const FALLBACK = { lstm_forecaster: 60, tcn_forecaster: 60, char_transformer: 15 };
const KEY = "scellis-speed:";
const EVALS = 3; // validations a quick run makes
const CALIBRATION_STEPS = 7;
const CALIBRATION_EVERY = 3; // validations at steps 3 and 6, and of the last state
// the announced range around the estimate: a warm step varies by some tens of percent
// on a shared or software GPU, and validations and start-up more than steps do
const RANGE = [0.8, 1.5];

export const median = (xs) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// the warm step, a validation's time and the start-up (s) of one run's timed events
// ([ms, event] pairs, in order, from the moment the run was asked for)
export function timesOf(marks, t0) {
  const steps = [], evals = [];
  let last = null, start = null;
  for (const [t, ev] of marks) {
    if (ev.kind === "start") start = (t - t0) / 1000;
    if (ev.kind === "eval" && last) evals.push((t - last[1]) / 1000);
    if (ev.kind !== "log") { if (ev.kind === "eval") last = null; continue; }
    // the first step (run start to its log) pays for compiles and is never a gap here;
    // a gap that held a validation is not a step
    if (last && ev.step > last[0]) steps.push((t - last[1]) / 1000 / (ev.step - last[0]));
    last = [ev.step, t];
  }
  return { step: median(steps), eval: median(evals), start };
}

const secs = (s) => (s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(1)} s`);

export function createQuickRun({ root, client, app, hint }) {
  // speed: {step, eval, start} in seconds (null until measured); timed: the last
  // calibration's; last: the last sized run's {estimate, range, actual_s}
  const state = { target_s: 45, example: null, speed: null, timed: null, steps: null, device: "",
    busy: false, last: null, estimate: null };
  app.quickRun = state;
  const input = (name) => root.querySelector(`[data-option="${name}"]`);
  const key = () => `${KEY}${state.example}:${state.device}`;
  const plain = hint.textContent; // the page's own line, for a record sized by no quick run
  // per_step: the warm step the run is sized by (null: not measured yet)
  Object.defineProperty(state, "per_step", { enumerable: true, get: () => (state.speed ? state.speed.step : null),
    set: (v) => { state.speed = v === null ? null : { step: v, eval: 0, start: 0 }; } });

  function remembered() {
    try {
      const v = JSON.parse(window.localStorage.getItem(key()) || "null");
      return v && v.step > 0 ? v : null;
    } catch (e) { return null; }
  }
  function remember(speed) {
    state.speed = speed;
    try { window.localStorage.setItem(key(), JSON.stringify(speed)); } catch (e) { /* this page only */ }
  }

  // the run's time (s) for `steps` at `speed`, and the range said around it
  function estimate(steps, every, speed) {
    // every `every` steps, and the last state always
    const evals = Math.floor(steps / every) + (steps % every ? 1 : 0);
    const t = (speed.start || 0) + steps * (speed.step + (speed.extra || 0)) + evals * (speed.eval || 0);
    return { steps, seconds: t, range: RANGE.map((k) => Math.max(1, Math.round(t * k))) };
  }

  // set the run controls to the sized quick run and say what it will take
  function size(speed) {
    state.speed = speed;
    const budget = state.target_s - (speed.start || 0) - EVALS * (speed.eval || 0);
    const steps = Math.max(3, Math.min(2000, Math.round(budget / (speed.step + (speed.extra || 0)))));
    state.steps = steps;
    input("max_steps").value = String(steps);
    const every = Math.max(1, Math.round(steps / EVALS));
    input("eval_every").value = String(every);
    state.estimate = estimate(steps, every, speed);
    const [lo, hi] = state.estimate.range;
    hint.textContent = `quick run: ${steps} steps, about ${lo}–${hi} s on this GPU ` +
      `(${secs(speed.step)} a warm step, measured); clear “max steps” for the record's full length`;
  }

  // the example's quick run: sized at once when this GPU's speed is known
  function apply(example) {
    state.example = example;
    state.steps = null;
    state.speed = null;
    state.estimate = null;
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
    hint.textContent = `quick run of about ${state.target_s} s: Train first times a few steps ` +
      "on this GPU to size it; clear “max steps” for the record's full length";
  }

  // still the quick run: the user has not typed another max steps
  const untouched = () => state.steps !== null && input("max_steps").value === String(state.steps);

  // before Train: time a few unrecorded steps and one validation when the speed is not
  // known yet
  async function ready(log) {
    if (!CADENCE[state.example] || state.speed !== null || !untouched()) return;
    state.busy = true;
    const before = hint.textContent; // back once the measurement is over, however it ends
    hint.textContent = `measuring this GPU's speed (${CALIBRATION_STEPS} steps)…`;
    const marks = [], t0 = performance.now();
    try {
      await client.stream("train", {
        record_text: app.record, max_steps: CALIBRATION_STEPS, log_every: 1, eval_every: CALIBRATION_EVERY,
        samples: false, ...(CADENCE[state.example].val_rows ? { val_rows: CADENCE[state.example].val_rows } : {}),
        ...(app.budgetArgs ? app.budgetArgs() : {}),
      }, (ev) => marks.push([performance.now(), ev]));
    } finally {
      state.busy = false;
      hint.textContent = before;
    }
    const got = timesOf(marks, t0);
    if (got.step === null) return;
    state.timed = got;
    remember(got);
    size(got);
    log(`timed a warm step at ${secs(got.step)}: a quick run of ${state.steps} steps`);
  }

  // a run's own timings (page clock) size the next one; a sized run's actual duration
  // is kept beside what was announced for it
  let run = null;
  app.on("run-started", () => {
    run = { t0: performance.now(), marks: [], sized: untouched() ? state.estimate : null };
  });
  app.on("run-event", (ev) => { if (run) run.marks.push([performance.now(), ev]); });
  app.on("run-failed", () => { run = null; });
  function learn(end) {
    const mine = run;
    run = null;
    if (!mine || !end || end.stopped_by_user) return;
    const actual = (performance.now() - mine.t0) / 1000;
    // the sized run itself (its options can be given past the panel's inputs)
    if (mine.sized && end.steps === mine.sized.steps) {
      state.last = { ...mine.sized, actual_s: actual };
      hint.textContent = hint.textContent.replace(/ · the last one took .*$/, "") +
        ` · the last one took ${Math.round(actual)} s`;
    }
    const got = timesOf(mine.marks, mine.t0);
    if (got.step === null || !CADENCE[state.example]) return;
    const evalS = got.eval ?? (state.speed ? state.speed.eval : 0), start = got.start ?? 0;
    const evals = mine.marks.filter(([, ev]) => ev.kind === "eval").length;
    const extra = Math.max(0, (actual - start - end.steps * got.step - evals * evalS) / end.steps);
    remember({ step: got.step, eval: evalS, start, extra });
  }

  app.on("engine", (hello) => {
    state.device = (hello && hello.device) || "";
    if (state.example) apply(state.example);
  });
  return { apply, ready, learn, state };
}
