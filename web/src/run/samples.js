// Evaluation samples: forecast vs actual (a small SVG line chart, named after the run's
// data: labels from data/labels.js) or generated text.
import { stepUnit } from "../data/labels.js";
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
  const w = 640, h = 180, pad = 24;
  const all = [...ev.actual, ...ev.predicted];
  const lo = Math.min(...all), hi = Math.max(...all);
  const n = ev.actual.length;
  const x = (i) => pad + ((w - 2 * pad) * i) / Math.max(n - 1, 1);
  const y = (v) => h - pad - ((h - 2 * pad) * (v - lo)) / Math.max(hi - lo, 1e-9);
  const path = (vs) => vs.map((v, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join("");
  const what = labels && labels.target ? `${labels.target}: ` : "";
  el.innerHTML = `<h3>${what}forecast vs actual (${sampleSpan(labels)})</h3>
    <svg class="sample-plot" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}">
      <path d="${path(ev.actual)}" fill="none" stroke="#111827" stroke-width="2"/>
      <path d="${path(ev.predicted)}" fill="none" stroke="#f59e0b" stroke-width="2" stroke-dasharray="5 3"/>
      <text x="${pad}" y="14" font-size="12">actual (black) vs forecast (orange)</text>
    </svg>`;
}
