// Evaluation samples: forecast vs actual (a small SVG line chart, named after the run's
// data: labels from data/labels.js) or generated text.
import { plural, stepUnit } from "../data/labels.js";
import { renderForecast } from "./forecast_plot.js";
const TEXT_ROWS = 4; // prompts shown; the event carries one row per prompt of a batch

// what the chart plots: the first step of each validation window's forecast, counted
// in the data's own unit, and the window and horizon the record has now
export function sampleSpan(labels) {
  const unit = stepUnit(labels);
  const n = (k) => `${k} ${unit}${k === 1 ? "" : "s"}`;
  const h = labels && labels.horizon, w = labels && labels.window;
  const from = w ? ` after ${n(w)}` : "";
  return h > 1 ? `validation, one ${unit} ahead${from}: the first of a ${h}-${unit} horizon`
    : `validation, one ${unit} ahead${from}`;
}

export function renderSample(el, ev, labels = null) {
  if (ev.type === "text") {
    const rows = (ev.rows || [{ prompt: ev.prompt, generated: ev.generated }]).slice(0, TEXT_ROWS);
    const how = ev.greedy ? "greedy, " : "";
    el.innerHTML = `<h3>generated text <span class="muted">(${how}${ev.generated.length} characters` +
      " after each validation prompt; generated part highlighted)</span></h3>";
    for (const row of rows) {
      const pre = document.createElement("pre");
      pre.className = "sample-text";
      const prompt = document.createElement("span");
      prompt.className = "prompt";
      prompt.textContent = row.prompt;
      const gen = document.createElement("span");
      gen.className = "generated";
      gen.textContent = row.generated;
      pre.append(prompt, gen);
      el.appendChild(pre);
    }
    return;
  }
  // on the forecast chart's axes: x the series' own steps (the row each forecast is
  // of, counted from the first row, in the data's unit), y the target in its units
  const unit = stepUnit(labels);
  const ahead = labels && Number.isInteger(labels.window) ? labels.window : 0;
  const at = (i) => (ev.starts ? ev.starts[i] + ahead : i);
  const plot = { past: ev.actual.map((a, i) => [at(i), a, ev.predicted[i]]), future: [] };
  const what = labels && labels.target ? `${labels.target}: ` : "";
  el.innerHTML = `<h3>${what}forecast vs actual (${sampleSpan(labels)})</h3><div class="sample-plot"></div>`;
  const x = unit === "row" ? "row of the series" : `${plural(unit)} since the series' first row`;
  renderForecast(el.querySelector(".sample-plot"), plot, { x, y: (labels && labels.target) || "value" });
}
