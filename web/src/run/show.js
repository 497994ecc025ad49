// What the run panel does with each kind of run event. The kinds and their fields are
// the engine's (events.schema.json, made from scellis.train.events): a test checks
// that every kind the schema lists has a handler here and that each one runs.
// ctx: { $ (element by id), state, curves, log, renderSample }.
import { metricUnit } from "../data/labels.js";
import { median } from "./quick_run.js";

// whole seconds first, so 1979.6 s reads 33m00s and never 32m60s
export function fmtTime(s) {
  if (!isFinite(s) || s < 0) return "–";
  const whole = Math.round(s);
  if (whole < 60) return `${whole}s`;
  const h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60);
  const sec = String(whole % 60).padStart(2, "0");
  return h ? `${h}h${String(m).padStart(2, "0")}m` : `${m}m${sec}s`;
}

// when a run started (seconds since the epoch), short, in the user's own time zone
export function startedAt(seconds) {
  return new Date(seconds * 1000).toLocaleString(undefined,
    { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

const num = (v) => (v == null ? "n/a" : Number(v).toPrecision(4).replace(/\.?0+$/, ""));

// "mae 14.26 sunspots (persistence 23.06, seasonal naive 27.65) · rmse …": each metric,
// in the data's units where it has them (labels: data/labels.js), beside the naive
// baselines' values on the same windows
export function metricsText(metrics, baselines = {}, labels = null) {
  return Object.entries(metrics).map(([name, value]) => {
    const unit = metricUnit(name, labels);
    const beside = Object.entries(baselines || {})
      .filter(([, b]) => b && b[name] != null)
      .map(([base, b]) => `${base.replace(/_/g, " ")} ${num(b[name])}`);
    return `${name} ${num(value)}${unit ? ` ${unit}` : ""}` + (beside.length ? ` (${beside.join(", ")})` : "");
  }).join(" · ");
}

// bytes in the unit that reads best: 512 KiB, 24.0 MiB, 6.25 GiB
export function humanBytes(b) {
  if (b == null || !isFinite(b)) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0, v = b;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return i === 0 ? `${v} B` : `${v.toPrecision(3)} ${units[i]}`;
}

// a fix applies when it alone clears what is wrong: an edit the planner planned says so
// in its verdict; advice (no edit) when its estimated saving brings the peak under the
// budget, or, for the binding-size fix (one tensor's size), when the peak fits already
const applies = (ev, r) => r.verdict ? r.verdict !== "red"
  : r.fix && r.saving > 0
    && (/BindingSize/.test(r.fix) ? ev.peak <= ev.budget : ev.peak - r.saving <= ev.budget);

// a QLoRA run's frozen base, as the planner counted it: codes and scales, not f32
// tensors wider than one binding: the kernels split them into windows, so it is a fact
// about the run, not a warning
function splitNote(ev) {
  const n = ev.split_tensors || 0;
  return n ? `; ${n} tensor${n === 1 ? "" : "s"} split into binding windows` : "";
}

function storedBase(ev) {
  const q = ev.quantized;
  if (!q || !q.bytes) return "";
  const weights = ev.classes && ev.classes.parameters;
  return `; weights ${humanBytes(weights)}, of which the frozen base (${q.weights} dense weights) ` +
    `is stored as ${String(q.format).toUpperCase()} codes and scales: ${humanBytes(q.bytes)}`;
}

// a fix the tab can apply itself: the planner planned its edit (a record edit or a run
// option) and its verdict is not red; advice (no edit) stays a sentence
const clickable = (r) => r.verdict && r.verdict !== "red"
  && (Object.keys(r.set || {}).length || Object.keys(r.option || {}).length);

// one button per fix the tab can apply: what it is, what it saves, the verdict it gives
function fixButton(r, onFix) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `plan-fix plan-fix-${r.verdict}`;
  b.dataset.kind = r.kind;
  b.dataset.verdict = r.verdict;
  b.textContent = `${r.fix}: saves ${humanBytes(r.saving)}, ${r.verdict}`;
  b.title = `${r.detail || r.fix}; the plan with it is ${r.verdict}` +
    (r.peak != null ? ` (peak ${humanBytes(r.peak)})` : "");
  b.addEventListener("click", () => {
    for (const x of b.parentElement.querySelectorAll("button")) x.disabled = true;
    onFix(r);
  });
  return b;
}

// The budget is the user's declaration, never a measurement (WebGPU reports no memory
// size), so a peak over it may only mean the declaration is low: raising it is offered
// as that, beside the fixes, never as one of them. A budget the host measured is not.
const DECLARED_BUDGET = /^declared|set in this tab/;

function budgetAdvice(ev, over) {
  if (!over || !DECLARED_BUDGET.test(ev.budget_source || "")) return null;
  const b = document.createElement("button");
  b.type = "button";
  b.className = "plan-budget";
  b.textContent = "set the budget";
  b.title = "the GPU memory budget above: what this GPU holds";
  b.addEventListener("click", () => {
    const input = document.getElementById("run-budget");
    if (input) { input.focus(); input.select(); }
  });
  const row = document.createElement("span");
  row.className = "plan-budget-advice";
  row.append(` If this GPU has more memory than ${humanBytes(ev.budget)} (this run needs about ` +
    `${humanBytes(ev.peak)}), `, b, " to what it holds.");
  return row;
}

// the plan box: verdict, peak against the budget, what is wrong and what would fix it;
// each fact once (the summary already says the peak is over the budget). onFix(r): a
// remediation's button was pressed (without it, every fix is a sentence)
export function showPlan(box, ev, onFix = null) {
  box.className = `plan plan-${ev.verdict}`;
  box.dataset.verdict = ev.verdict;
  const over = ev.peak > ev.budget;
  const notes = [...new Set([...(ev.problems || []), ...(ev.warnings || [])])]
    .filter((w) => !/^peak .* exceeds the budget/.test(w));
  const usable = (ev.remediations || []).filter((r) => applies(ev, r));
  const buttons = onFix ? usable.filter(clickable) : [];
  const fixes = usable.filter((r) => !buttons.includes(r))
    .map((r) => `${r.fix} (saves about ${humanBytes(r.saving)})`);
  let advice = "";
  if (fixes.length) advice = ` To fit: ${fixes.join("; or ")}.`;
  else if (over && !buttons.length) advice = " No single change fits it in: make the model or the batch smaller.";
  box.textContent = `memory plan: ${ev.verdict} — peak ${humanBytes(ev.peak)} ` +
    `${over ? "is over the" : "of"} ${humanBytes(ev.budget)} budget (${ev.budget_source}; ` +
    `largest buffer ${humanBytes(ev.largest_buffer)}${splitNote(ev)})` + storedBase(ev) + notes.map((w) => `; ${w}`).join("") +
    (notes.length || advice ? "." : "") + advice;
  const raise = budgetAdvice(ev, over);
  if (raise) box.appendChild(raise);
  if (!buttons.length) return;
  const row = document.createElement("span");
  row.className = "plan-fixes";
  row.append(fixes.length ? " Or apply: " : " Apply a fix: ");
  for (const r of buttons) row.appendChild(fixButton(r, onFix));
  box.appendChild(row);
}

const STEP_WINDOW = 15; // the steps the pace is the median of

export const HANDLERS = {
  plan(ctx, ev) {
    showPlan(ctx.$("run-plan"), ev, ctx.applyFix);
  },
  progress(ctx, ev) {
    const { state } = ctx;
    if (ev.run) state.runId = ev.run;
    state.total = ev.total_steps;
    ctx.$("run-total").textContent = ev.total_steps;
    if (ev.run) ctx.log(`recording run ${ev.run}`);
  },
  start(ctx, ev) {
    const { state } = ctx;
    state.t0 = performance.now();
    state.step0 = ev.step;
    state.marks = [];
    state.stepTimes = [];
    state.lastLog = null;
    ctx.log(`start on ${ev.device}, tier ${ev.tier.name}, ${ev.parameters} parameters`);
  },
  log(ctx, ev) {
    // the time a step takes: the median over the last steps between log points, so a
    // validation or a slow step moves it little; the first step (shader compiles) and
    // a pause are left out. The ETA is the steps left at that pace
    const { state } = ctx;
    const now = performance.now();
    state.marks.push([ev.step, now]);
    if (state.marks.length > 6) state.marks.shift();
    state.stepTimes = state.stepTimes || [];
    const prev = state.lastLog;
    if (prev && ev.step > prev[0]) state.stepTimes.push((now - prev[1]) / 1000 / (ev.step - prev[0]));
    if (state.stepTimes.length > STEP_WINDOW) state.stepTimes.shift();
    state.lastLog = [ev.step, now];
    const per = median(state.stepTimes);
    ctx.$("run-step").textContent = ev.step;
    ctx.$("run-rate").textContent = per ? (1 / per).toFixed(2) : "–";
    ctx.$("run-eta").textContent = per ? fmtTime((state.total - ev.step) * per) : "–";
    if (ev.loss != null) ctx.$("run-loss").textContent = ev.loss.toFixed(4);
    ctx.$("run-progress-bar").style.width = `${(100 * ev.step) / Math.max(state.total, 1)}%`;
    ctx.curves.add("loss", ev.step, ev.loss);
    ctx.curves.add("lr", ev.step, ev.lr);
  },
  eval(ctx, ev) {
    ctx.$("run-val").textContent = ev.val_loss.toFixed(4);
    ctx.curves.add("val_loss", ev.step, ev.val_loss);
    if (ev.metrics) {
      // the verdict (beats persistence and seasonal naive? by how much, else the fix) follows
      const verdict = ev.verdict ? ` · ${ev.verdict.text}` : "";
      ctx.$("run-metrics").textContent = metricsText(ev.metrics, ev.baselines, ctx.state.labels) + verdict;
    }
  },
  epoch(ctx, ev) {
    ctx.log(`epoch ${ev.epoch} done at step ${ev.step}`);
  },
  sample(ctx, ev) {
    ctx.renderSample(ctx.$("run-sample"), ev, ctx.state.labels);
  },
  warning(ctx, ev) {
    ctx.log(`warning: ${ev.message}`);
  },
  early_stop(ctx, ev) {
    ctx.log(`early stop: ${ev.reason}`);
  },
  history(ctx, ev) {
    // the resumed run's earlier points (stored metrics), so its curves start at step 1
    for (const [name, points] of Object.entries(ev.metrics || {})) {
      for (const [step, value] of points) ctx.curves.add(name, step, value);
    }
  },
  resume(ctx, ev) {
    ctx.state.runId = ev.run;
    ctx.log(ev.parent ? `run ${ev.run} branches off ${ev.parent} (the later history of that run stays)`
      : `resuming run ${ev.run} from step ${ev.step}`);
    for (const why of ev.skipped || []) ctx.log(`skipped ${why}`);
  },
  checkpoint(ctx, ev) {
    ctx.log(`checkpoint at step ${ev.step} (${ev.reason})`);
  },
  paused(ctx, ev) {
    // the engine holds now (a step under way when Pause was pressed has ended); a
    // resume pressed meanwhile, or a run shown from another window, keeps its state
    const { state } = ctx;
    if (state.running && state.paused) ctx.$("run-state").textContent = "paused";
    ctx.log(`paused after step ${ev.step}`);
  },
  stopped(ctx, ev) {
    const { state } = ctx;
    ctx.log(state.detach && state.detach.phase === "handing"
      ? `handed over at step ${ev.step}` : `stopped by the user at step ${ev.step}`);
  },
  end(ctx, ev) {
    if (!ev.stopped_by_user) ctx.$("run-progress-bar").style.width = "100%";
    ctx.$("run-eta").textContent = "–";
    ctx.log(`end: ${ev.steps} steps in ${ev.wall_s.toFixed(1)}s, loss ${ev.loss?.toFixed(4)}`);
  },
  // the command line's own lines: shown as they are if one ever reaches the page
  info(ctx, ev) { ctx.log(ev.message); },
  error(ctx, ev) { ctx.log(`error: ${ev.message}`); },
  resume_hint(ctx, ev) { ctx.log(`resume with: ${ev.command}`); },
};

export function showEvent(ctx, ev) {
  const handle = HANDLERS[ev.kind];
  if (handle) handle(ctx, ev);
  else ctx.log(`(an event of an unknown kind: ${ev.kind})`);
}
