// Use a trained run of the store: a series model draws its forecast (validation range
// and a horizon past the end, in the data's units) and downloads its predictions as the
// CSV `scellis predict RUN --horizon N --out FILE` writes; a language model continues a
// prompt (generate_box.js). The engine computes everything (webapp.use_api): this
// panel asks and shows.
import { renderForecast } from "./forecast_plot.js";
import { downloadText } from "./download.js";
import { mountGenerateBox } from "./generate_box.js";
import { STORE } from "./runs.js";

export const HORIZON_CAP = 1000; // the engine's (webapp.use_api.HORIZON_CAP)

const TEMPLATE = `
  <h3>Use a trained run</h3>
  <div class="use-controls">
    <label class="run-opt use-run-label">run <select id="use-run"></select></label>
    <span id="use-what" class="muted">train a run first: its checkpoints appear here</span>
  </div>
  <div id="use-series" hidden>
    <div class="use-controls">
      <label class="run-opt">horizon <span id="use-horizon-unit"></span> <input id="use-horizon" type="number" min="0" max="${HORIZON_CAP}" step="1" value="12" title="steps to forecast past the series' end"></label>
      <button id="use-forecast">Show forecast</button>
      <button id="use-predict" title="the predictions and the forecast as a CSV file (date, actual, predicted, horizon)">Predict (CSV)</button>
    </div>
    <div id="use-plot" class="use-plot"></div>
  </div>
  <div id="use-text" hidden></div>
  <div id="use-message" class="use-message" role="status" aria-live="polite"></div>`;

// the x axis: the datetime column, with the spacing its name does not already say
// ("date (weekly)", but "year" alone)
function timeLabel(r) {
  if (!r.datetime) return "time step (row)";
  const f = r.frequency;
  return f && r.datetime.toLowerCase() !== f.unit ? `${r.datetime} (${f.name})` : r.datetime;
}

export function mountUse(el, client, app) {
  el.innerHTML = TEMPLATE;
  const $ = (id) => el.querySelector(`#${id}`);
  const state = { run: null, info: null, result: null, busy: false, away: false, held: null };
  app.use = state; // tests read what the panel shows from here

  const message = (text, level = "info") => {
    $("use-message").className = text ? `use-message runs-${level}` : "use-message";
    $("use-message").textContent = text;
  };
  const gen = mountGenerateBox($("use-text"), client, { message, state });
  state.generator = gen;

  function setBusy(busy) {
    state.busy = busy;
    for (const id of ["use-forecast", "use-predict"]) $(id).disabled = busy;
    gen.setBusy(busy);
    if (busy) gen.stop(); // a training run never waits for a generation
  }

  // the runs with a checkpoint; a new one (just trained) becomes the picked one, and a
  // run with a newer checkpoint (resumed) is asked about again
  let seen = new Map(); // run id -> checkpoint step shown
  function listRuns(list) {
    if (state.away) return;
    const usable = list.filter((r) => r.checkpoint_step != null);
    const pick = $("use-run");
    pick.innerHTML = "";
    for (const r of usable) pick.add(new Option(`${r.id} · ${r.model || "?"} · step ${r.checkpoint_step}`, r.id));
    const fresh = seen.size ? usable.find((r) => !seen.has(r.id)) : null;
    const kept = usable.find((r) => r.id === (state.run || state.held));
    const chosen = fresh || kept || usable[0] || null;
    const changed = chosen && seen.get(chosen.id) !== chosen.checkpoint_step;
    seen = new Map(usable.map((r) => [r.id, r.checkpoint_step]));
    if (chosen) pick.value = chosen.id;
    if ((chosen && chosen.id) === state.run && !changed) return;
    // a forecaster just trained shows its forecast at once: what a user trained it for
    choose(chosen ? chosen.id : null).then((info) => {
      if (fresh && info && info.kind === "series" && !state.busy) show();
    });
  }

  // forget what was shown; ``what`` (unless null) replaces the line naming the run
  function clear(run, what) {
    state.run = run;
    state.info = null;
    state.result = null;
    $("use-plot").innerHTML = "";
    $("use-series").hidden = true;
    $("use-text").hidden = true;
    message("");
    if (what !== null) $("use-what").textContent = what;
  }

  async function choose(run) {
    clear(run, run ? null : "train a run first: its checkpoints appear here");
    if (!run) return;
    let i;
    try {
      i = await client.call("use_info", { run, store: STORE });
    } catch (e) {
      if (state.run === run) message(`run ${run} cannot be used: ${e.message}`, "error");
      return;
    }
    if (state.run !== run) return; // another run was picked meanwhile
    state.info = i;
    const series = i.kind === "series";
    const past = i.forecasts ? "" : "; it reads other columns too, so it predicts the series only";
    $("use-what").textContent = series
      ? `forecasts ${i.target}${i.datetime ? ` by ${i.datetime}` : ""}${i.frequency ? `, ${i.frequency.name}` : ""} (checkpoint at step ${i.step}${past})`
      : `a language model, context ${i.context} (checkpoint at step ${i.step})`;
    // the horizon counts the series' own steps: weeks for a weekly file
    const unit = series && i.frequency ? i.frequency.unit : "step";
    $("use-horizon-unit").textContent = `(${unit}s)`;
    $("use-horizon").title = `${unit}s to forecast past the series' end`;
    $("use-series").hidden = !series;
    $("use-text").hidden = series;
    $("use-horizon").disabled = series && !i.forecasts;
    if (series && !i.forecasts) $("use-horizon").value = "0";
    if (!series) gen.show(i);
    app.emit("use-info", i);
    return i;
  }

  function horizon() {
    const h = Number($("use-horizon").value);
    if (!Number.isInteger(h) || h < 0 || h > HORIZON_CAP) {
      throw new Error(`horizon must be a whole number from 0 to ${HORIZON_CAP}`);
    }
    return h;
  }

  // the engine's predictions (cached per run and horizon: Predict after Show forecast
  // downloads what is drawn). The chart needs only the validation range's predictions
  // (span "chart"): on a long series every window's forward costs, so Show forecast asks
  // for those alone and Predict for every row; a full answer serves both.
  // Only the latest request is shown: an older one (a long horizon, an automatic forecast)
  // that answers later must not replace what the user asked for since.
  let latest = 0;
  async function predict(span = "chart") {
    const h = horizon();
    const r = state.result;
    if (r && r.run === state.run && r.horizon === h && (r.span === "all" || span === "chart")) return r;
    const ticket = ++latest;
    const run = state.run;
    message(`predicting with run ${run}…`);
    const out = await client.call("predict", { run, store: STORE, horizon: h, span });
    if (ticket !== latest || run !== state.run) return null;
    state.result = { ...out, run, horizon: h };
    message("");
    return state.result;
  }

  async function act(fn) {
    if (state.busy) return null;
    for (const id of ["use-forecast", "use-predict"]) $(id).disabled = true;
    try {
      return await fn();
    } catch (e) {
      if (!state.away) message(e.message, "error"); // else the store left mid-request
      return null;
    } finally {
      for (const id of ["use-forecast", "use-predict"]) $(id).disabled = state.busy;
    }
  }

  const draw = async (span) => {
    const r = await predict(span);
    if (!r) return null; // a newer request answers instead
    const labels = { x: timeLabel(r), y: r.target };
    renderForecast($("use-plot"), r.plot, labels);
    app.emit("use-plot", r);
    return r;
  };
  const show = () => act(() => draw("chart"));
  const download = () => act(async () => {
    const r = await draw("all");
    if (!r) return null;
    downloadText(`predictions-${r.run}.csv`, r.csv);
    message(`${r.rows.length} rows (${r.horizon} past the end) saved as predictions-${r.run}.csv`, "ok");
    return r;
  });

  // Another window holds the run store (a detached run, or this detached window's run
  // went back to its tab): no run can be read here, so the panel waits instead of
  // failing, and picks its run again from the list that comes with the store.
  function storeAway(away) {
    state.away = away;
    $("use-run").disabled = away;
    if (!away) {
      seen = new Map(); // every run is asked about again
      return;
    }
    state.held = state.run || state.held;
    gen.stop();
    latest += 1; // a forecast on its way answers no one
    clear(null, "the run store is with another window: its runs can be used here once it is back");
  }

  $("use-run").addEventListener("change", (e) => choose(e.target.value));
  app.on("store-away", storeAway);
  $("use-forecast").addEventListener("click", () => { show(); });
  $("use-predict").addEventListener("click", () => { download(); });
  // a new horizon redraws a chart already shown
  $("use-horizon").addEventListener("change", () => { if ($("use-plot").firstChild) show(); });
  app.on("runs", listRuns);
  Object.assign(state, { setBusy, choose, show, download });
  return state;
}
