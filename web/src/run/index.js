// The run panel: memory verdict, Train / Pause / Stop, progress, step/s and ETA, live
// curves (train and validation loss, LR) and evaluation samples. Mounted by main.js.
import { createCurves } from "./curves.js";
import { renderSample } from "./samples.js";
import { showEvent, showPlan } from "./show.js";
import { watchPlan } from "./live_plan.js";
import { createFixer } from "./plan_fix.js";
import { mountExtensionLoader } from "./extension_load.js";
import { createQuickRun } from "./quick_run.js";
import { optionsHtml, readOptions } from "./options.js";
import OPTIONS from "./options.schema.json";
import { watchVisibility } from "./visibility.js";
import { mountRuns, STORE } from "./runs.js";
import { createShare } from "./share.js";
import { mountUse } from "./use_panel.js";
import { createDetacher, detachedRun, runDetached } from "./detach.js";
import { showCutOff } from "./cut_off.js";
import { showBanner, clearBanner } from "../banner.js";
import { createDrafts } from "../drafts.js";
import { BUDGET_HTML, mountBudget } from "./budget.js";

const TEMPLATE = `
  <h2>Run</h2>
  <div class="run-controls">
    <select id="run-example" aria-label="example record">
      <option value="lstm_forecaster">LSTM forecaster (sunspots)</option>
      <option value="tcn_forecaster">TCN forecaster (sunspots)</option>
      <option value="char_transformer">char Transformer (Python help)</option>
    </select>
    <button id="run-train" disabled>Train</button>
    <button id="run-pause" disabled>Pause</button>
    <button id="run-stop" disabled>Stop</button>
    <span id="run-blocked" class="run-blocked" role="status" hidden></span>
    <span id="run-hint" class="muted" role="status">a quick run: clear “max steps” for the record's full length</span>
    <button id="run-wakelock" title="keep the screen on while training (asks first)">Keep screen on</button>
    <button id="run-detach" title="open the run in its own window">Detach</button>
  </div>
  <div id="run-options-main" class="run-options-fields"></div>
  <details id="run-options" class="run-options"><summary>more run options</summary>
    <div id="run-options-fields" class="run-options-fields"></div></details>
  <div id="run-extensions" class="run-extensions"></div>
  <div id="run-share" class="run-share" role="status" aria-live="polite" hidden></div>
  ${BUDGET_HTML}
  <div id="run-plan" class="plan plan-none" role="status">memory plan: not computed yet</div>
  <div class="progress"><div id="run-progress-bar"></div></div>
  <div id="run-stats" class="stats">
    <span>step <b id="run-step">0</b>/<b id="run-total">?</b></span>
    <span><b id="run-rate">–</b> step/s</span>
    <span>ETA <b id="run-eta">–</b></span>
    <span>loss <b id="run-loss">–</b></span>
    <span>val <b id="run-val">–</b></span>
    <span id="run-metrics" class="metrics"></span>
    <span id="run-state" class="muted">idle</span>
  </div>
  <div id="run-curves"></div>
  <div id="run-sample"></div>
  <div id="run-runs"></div>
  <div id="run-use" class="run-use"></div>
  <details id="run-log-box"><summary>run log</summary><ol id="run-log"></ol></details>
`;

export function mount(el, client, app) {
  el.innerHTML = TEMPLATE;
  // the example picker lives outside the panel (the page's start strip): found by id there
  const $ = (id) => el.querySelector(`#${id}`) || document.getElementById(id);
  // the options a user reaches for first stay in view; the rest fold away
  const MAIN = new Set(["epochs", "max_steps", "eval_every", "replay"]);
  $("run-options-main").innerHTML = optionsHtml(OPTIONS.filter((o) => MAIN.has(o.name)));
  $("run-options-fields").innerHTML = optionsHtml(OPTIONS.filter((o) => !MAIN.has(o.name)));
  // the panel's run options, as the engine's train takes them
  const panelOptions = () => readOptions(OPTIONS, (name) => {
    const input = el.querySelector(`[data-option="${name}"]`);
    return input.type === "checkbox" ? input.checked : input.value;
  });
  const curves = createCurves($("run-curves"));
  const use = mountUse($("run-use"), client, app);
  const state = {
    running: false, paused: false, total: 0, t0: 0, step0: 0, marks: [], events: [], remote: [],
    runId: null, away: false, current: null,
  };
  app.run = state; // tests read the live run from here

  const log = (text) => {
    const li = document.createElement("li");
    li.textContent = `${new Date().toISOString().slice(11, 19)} ${text}`;
    $("run-log").appendChild(li);
    app.emit("run-log", text);
  };
  state.log = log;
  mountExtensionLoader($("run-extensions"), { client, app, log });
  // before anything plans: every plan and run is held to the budget this box says
  state.budget = mountBudget({ $, client, app, onChange: () => state.plan && state.plan.soon() });

  // what the last run showed: gone once another run starts or another example is picked
  function clearRunView() {
    for (const id of ["run-step", "run-loss", "run-val"]) $(id).textContent = id === "run-step" ? "0" : "–";
    $("run-total").textContent = "?";
    $("run-rate").textContent = "–";
    $("run-eta").textContent = "–";
    $("run-metrics").textContent = "";
    $("run-progress-bar").style.width = "0";
    $("run-sample").innerHTML = "";
    curves.reset();
  }
  state.clearRunView = clearRunView;

  // an edited example comes back as it was left (drafts.js)
  const drafts = createDrafts(app, document.getElementById("draft-note") || document.createElement("div"));
  const quick = createQuickRun({ root: el, client, app, hint: $("run-hint") });
  // keep: the data panel asked, for a file it holds (it keeps showing that file)
  async function loadExample(name, { keep = false } = {}) {
    quick.apply(name);
    const r = await fetch(`examples/${name}.sml`);
    const text = await r.text();
    app.recordName = name;
    app.record = drafts.open(name, text);
    app.emit("record", app.record);
    app.emit("example", { name, keep });
  }
  // another panel picks an example: the picker and the run view follow, as on a pick
  app.loadExample = async (name, opts) => {
    $("run-example").value = name;
    if (!state.running) clearRunView();
    await loadExample(name, opts);
  };
  // the picker sits in the page's "start here" strip, where a newcomer looks first
  const startSlot = document.getElementById("start-example");
  if (startSlot) startSlot.appendChild($("run-example"));
  $("run-example").addEventListener("change", (e) => {
    if (!state.running) clearRunView();
    loadExample(e.target.value);
  });
  // the page opens on what was shown last: an imported model, else the picked example
  const imported = drafts.openImported(() => {
    const picker = $("run-example");
    const mark = picker.querySelector("option[data-imported]");
    if (mark) mark.remove();
    picker.selectedIndex = 0;
    loadExample(picker.value);
  });
  if (imported !== null) {
    app.record = imported;
    app.emit("record", app.record);
  } else loadExample($("run-example").value);

  // Train waits for a record that validates: the first problem is said beside it and
  // on hover (Model View's projection, whichever view made the edit, says which)
  state.invalid = null;
  function refreshTrain() {
    const b = $("run-train");
    b.disabled = state.running || state.away || !state.engineUp || state.invalid !== null;
    b.title = state.invalid ? `fix the record first: ${state.invalid}` : "";
    const why = $("run-blocked");
    why.hidden = state.invalid === null;
    why.textContent = state.invalid ? `Train waits for a valid record: ${state.invalid}` : "";
  }
  app.on("model-view", (r) => {
    const d = r.diagnostics && r.diagnostics[0];
    state.invalid = r.ok || !d ? null
      : `${d.line}:${d.col}: ${d.message}${r.diagnostics.length > 1 ? ` (and ${r.diagnostics.length - 1} more)` : ""}`;
    refreshTrain();
  });

  function setRunning(on) {
    state.running = on;
    refreshTrain();
    $("run-pause").disabled = !on;
    $("run-stop").disabled = !on;
    $("run-state").textContent = on ? "training" : state.away ? "in the detached window" : "idle";
    use.setBusy(on); // predictions and generation wait while the engine trains
  }

  // while the run lives in a detached window this tab has no store: nothing to train into
  function setAway(on) {
    state.away = on;
    refreshTrain();
    $("run-detach").disabled = on;
    if (state.running) return;
    $("run-state").textContent = on ? "in the detached window" : "idle";
    // back from a window that closed mid-run: its relayed progress has no end to clear it
    if (!on) $("run-eta").textContent = "–";
  }

  function onEvent(ev) {
    state.events.push(ev);
    app.emit("run-event", ev);
    show(ev);
    if (ev.kind === "progress" && ev.run) runs.refresh(); // the new run's row, at once
  }

  // a detached window's events, relayed: shown here, kept apart from this tab's own
  function onRemote(ev) {
    state.remote.push(ev);
    show(ev);
  }

  // applyFix: set once the plan is watched (below); the run's own plan event shows buttons too
  const view = { $, state, curves, log, renderSample, applyFix: null };
  const show = (ev) => showEvent(view, ev);

  // every tab run is recorded in the worker's persistent store (IndexedDB) unless the
  // caller passes store: null. The data panel's dataset rides in the record itself: its
  // "Use in record" writes the saved file's path and sha256 into the data section.
  async function train(options = {}) {
    return go("train", { record_text: app.record, store: STORE, ...panelOptions(), ...options });
  }

  // options: {step} starts from that checkpoint (else the latest that loads)
  async function resume(run, options = {}) {
    return go("resume", { run, store: STORE, ...options });
  }

  // what the run's metrics and samples call its data: the record's (data/labels.js), or
  // for a resume the stored run's, asked of the engine while the run starts
  function nameData(cmd, args) {
    const labels = cmd === "train" ? app.labels : null;
    state.labels = labels;
    if (cmd !== "resume") return;
    client.call("use_info", { run: args.run, store: args.store }).then((i) => {
      if (state.labels !== labels) return; // another run by now
      state.labels = i.kind === "series" ? { kind: "csv", target: i.target, frequency: i.frequency } : { kind: "text" };
    }, () => {});
  }

  async function go(cmd, args) {
    if (state.running) return null;
    args = { ...app.budgetArgs(), ...args }; // the plan the run is held to is the box's
    clearBanner("run-error");
    state.failed = null;
    clearBanner("detach-closed"); // a run closed with its detached window: resumed or not
    clearRunView();
    state.events = [];
    state.runId = null;
    state.runRecord = args.record_text ?? null; // a resume trains its stored record
    nameData(cmd, args);
    setRunning(true);
    app.emit("run-started", cmd);
    const job = client.stream(cmd, args, onEvent);
    state.current = job;
    try {
      const result = await job;
      app.emit("run-done", result);
      return result;
    } catch (e) {
      const where = e.diagnostics && e.diagnostics.length
        ? ` (line ${e.diagnostics[0].line}, col ${e.diagnostics[0].col})` : "";
      // a red plan is already spelled out in the plan box: the banner only points there
      const red = state.events.some((x) => x.kind === "plan" && x.verdict === "red");
      const text = red ? "training did not start: the memory plan is red (see the plan box for what to change)"
        : `training failed: ${e.message}${where}`;
      showBanner("error", text, "run-error");
      state.failed = args.record_text ?? null;
      log(`error: ${e.message}`);
      app.emit("run-failed", e);
      throw e;
    } finally {
      setRunning(false);
      state.paused = false;
      $("run-pause").textContent = "Pause";
      runs.refresh();
      plan.recheck(); // the record may have changed while the run held the engine
    }
  }
  state.train = train;
  state.resume = resume;
  let share = null;
  const runs = mountRuns($("run-runs"), client, app, resume, () => share);
  state.runs = runs;
  // the first listing after the page opens: a run the last reload cut off is shown
  const offRuns = app.on("runs", (list) => {
    offRuns();
    if (!state.running && !state.events.length) state.cutOff = showCutOff($, list);
  });
  share = createShare({ client, app, run: state, box: $("run-share"), message: runs.message });
  state.share = share;
  // a failed run's banner stands until a record other than the one that failed plans
  // without a problem: the fix is in, the banner would only mislead
  function fixed(ev) {
    if (state.failed === undefined || state.failed === null || ev.verdict === "red") return;
    if (app.record === state.failed) return;
    state.failed = null;
    clearBanner("run-error");
  }
  const plan = watchPlan({
    client, app, state, box: $("run-plan"),
    show: (box, ev) => { showPlan(box, ev, view.applyFix); fixed(ev); },
    options: () => {
      const o = panelOptions();
      return { replay: o.replay, validate: o.validate, ...app.budgetArgs() };
    },
  });
  state.plan = plan;
  view.applyFix = createFixer({ client, app, $, replan: () => plan.soon(), log });
  // the plan counts replayed steps' residency and the validation forward: it follows
  // the replay and validate boxes too
  for (const id of ["run-replay", "run-validate"]) $(id).addEventListener("change", () => plan.soon());

  // a quick run not sized yet times a few steps first (quick_run.js)
  async function trainSized() {
    if (state.running || quick.state.busy) return null;
    $("run-train").disabled = true;
    $("run-state").textContent = "measuring this GPU's speed";
    try {
      await quick.ready(log);
    } catch (e) {
      log(`could not time a step: ${e.message}`); // the run itself says what is wrong
    } finally {
      setRunning(false);
    }
    return train();
  }
  state.trainSized = trainSized;
  app.on("run-done", () => quick.learn(state.events.find((e) => e.kind === "end")));
  $("run-train").addEventListener("click", () => trainSized().catch(() => {}));
  $("run-pause").addEventListener("click", () => {
    state.paused = !state.paused;
    client.control({ pause: state.paused });
    // the rate counts steps from the resume on: the paused seconds are no training time
    if (!state.paused) {
      state.marks = [];
      state.lastLog = null; // the paused seconds are no step's time
      state.t0 = performance.now();
      state.step0 = Number($("run-step").textContent) || state.step0;
    }
    $("run-pause").textContent = state.paused ? "Resume" : "Pause";
    // "paused" once the engine says it holds: the step under way finishes first
    $("run-state").textContent = state.paused ? "pausing…" : "training";
    log(state.paused ? "pause asked: the step under way finishes first" : "resumed");
  });
  $("run-stop").addEventListener("click", () => { client.control({ stop: true }); log("stop asked"); });

  const detached = detachedRun();
  if (detached) {
    runDetached(detached, { client, log, app, resume });
    watchVisibility(state, $("run-wakelock"), null, log);
    // a dashboard of the one run: nothing else is trained from here, and the run goes on
    // with the options it was started with, so none are offered
    const away = ["run-detach", "run-train", "run-example", "run-hint", "run-options-main", "run-options",
      "run-budget-row"];
    for (const id of away) $(id).hidden = true;
  } else {
    const detacher = createDetacher({ state, client, log, app, runs, setAway, onRemote });
    state.detachRun = detacher.detach;
    $("run-detach").addEventListener("click", () => detacher.detach());
    watchVisibility(state, $("run-wakelock"), detacher.detach, log);
    app.on("engine", () => {
      state.engineUp = true;
      refreshTrain();
      runs.refresh();
      share.open().catch((e) => log(`the link did not open: ${e.message}`));
    });
  }
}
