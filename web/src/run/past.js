// Past runs in the run panel: one run opened (its curves, final metrics, options and the
// record it trained) or two compared (loss curves overlaid, metrics side by side, what
// differs). The numbers are the engine's (runs_api: what `scellis runs show` and
// `scellis compare` read); this file only draws them.
import uPlot from "uplot";
import { metricsText, startedAt } from "./show.js";
import { STEP_INCRS, widthOf } from "./curves.js";

const COLORS = ["#2563eb", "#dc2626"];
const num = (v) => (v == null ? "–" : Number(v).toPrecision(4).replace(/\.?0+$/, ""));

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  e.append(...kids);
  return e;
}

// every curve on one step axis, sorted; a series is null where it has no point
export function alignCurves(list) {
  const steps = [...new Set(list.flatMap((c) => c.points.map(([s]) => s)))].sort((a, b) => a - b);
  const at = new Map(steps.map((s, i) => [s, i]));
  const cols = list.map((c) => {
    const col = steps.map(() => null);
    for (const [s, v] of c.points) col[at.get(s)] = v;
    return col;
  });
  return [steps, ...cols];
}

function chart(box, title, list) {
  const width = widthOf(box);
  const series = [{ label: "step" }, ...list.map((c) => ({
    label: c.label, stroke: c.color, dash: c.dash, spanGaps: true, width: 2,
    points: { show: c.dash != null },
  }))];
  const opts = { title, width, height: 200, scales: { x: { time: false }, y: { distr: 3 } },
    series, axes: [{ incrs: STEP_INCRS }, { size: 60 }] };
  const plot = new uPlot(opts, alignCurves(list), box);
  // drawn at a fixed size: follow the panel as the window changes
  new ResizeObserver(() => {
    const w = widthOf(box);
    if (w !== plot.width) plot.setSize({ width: w, height: 200 });
  }).observe(box);
  return plot;
}

function finals(r) {
  const parts = [`loss ${num(r.loss)}`, `best ${num(r.best_loss)}`, `val ${num(r.val_loss)}`];
  const extra = metricsText(r.metrics || {}, r.baselines || {});
  const verdict = r.verdict ? ` · ${r.verdict.text}` : "";
  return parts.join(" · ") + (extra ? ` · ${extra}` : "") + verdict;
}

function optionsList(config) {
  const opts = (config && config.options) || {};
  const given = Object.entries(opts)
    .filter(([, v]) => v != null && v !== false && !(Array.isArray(v) && !v.length));
  return given.map(([k, v]) => `${k}=${v}`).join(" ");
}

// the box under the run list; returns {open(id), compare(a, b), close(), data}
// onEdit(id): the run's record and weights into Model View, to edit and train on
export function mountPast(box, client, store, onEdit = null) {
  const state = { shown: null, data: null, plot: null };

  function close() {
    if (state.plot) state.plot.destroy();
    state.plot = null;
    state.shown = null;
    state.data = null;
    box.innerHTML = "";
    box.hidden = true;
  }

  function frame(title) {
    close();
    box.hidden = false;
    const head = el("h3", {}, title, " ");
    const x = el("button", { type: "button", class: "past-close", "aria-label": "close the run view" }, "Close");
    x.addEventListener("click", close);
    head.append(x);
    box.append(head);
  }

  async function open(id) {
    const r = await client.call("run_view", { run: id, store });
    frame(`Run ${r.id}`);
    state.shown = { kind: "run", ids: [r.id] };
    state.data = r;
    const about = [`${r.status} at step ${r.step}`, r.model_id || "", r.device || ""];
    box.append(el("p", { class: "muted past-about" }, about.filter(Boolean).join(" · ")));
    if (r.parent) box.append(el("p", { class: "past-parent", text: `branch of ${r.parent}` }));
    if (onEdit && r.checkpoints && r.checkpoints.length) {
      const b = el("button", { type: "button", class: "past-edit primary",
        title: "show this run's model, with its trained weights, in Model View: edit it and press Train to fine-tune it" },
      "Edit and fine-tune in Model View");
      b.addEventListener("click", () => onEdit(r.id));
      box.append(el("p", {}, b));
    }
    box.append(el("p", { class: "past-final", text: `final: ${finals(r)}` }));
    const plotBox = el("div", { class: "past-plot" });
    box.append(plotBox);
    state.plot = chart(plotBox, "loss", [
      { label: "train", color: COLORS[0], points: r.curves.loss },
      { label: "validation", color: COLORS[1], dash: [], points: r.curves.val_loss },
    ]);
    box.append(el("p", { class: "past-options", text: `options: ${optionsList(r.config) || "(defaults)"}` }));
    const rec = el("details", { class: "past-record" }, el("summary", { text: "the record it trained" }),
      el("pre", { text: r.record }));
    box.append(rec);
    return r;
  }

  // each run by what tells it apart: its id, its record's short hash, when it started
  // (the model id is often the same for both); the full values on hover
  function runCell(tag, r) {
    const th = el("th", { class: "past-run", title: `${r.id}\nmodel ${r.model_id || "–"}\nrecord ${r.record_hash}` });
    th.append(el("span", { class: "past-run-id", text: `${tag} ${r.id}` }),
      el("span", { class: "past-run-made muted", text: `record ${r.record_hash.slice(0, 8)} · ${startedAt(r.started)}` }));
    return th;
  }

  async function compare(a, b) {
    const g = await client.call("compare_runs", { a, b, store });
    const [ra, rb] = g.runs;
    frame(`Runs ${ra.id} (a) and ${rb.id} (b)`);
    state.shown = { kind: "compare", ids: [ra.id, rb.id] };
    state.data = g;
    const plotBox = el("div", { class: "past-plot" });
    box.append(plotBox);
    const curves = [];
    g.runs.forEach((r, i) => {
      const tag = i ? "b" : "a";
      curves.push({ label: `${tag} train`, color: COLORS[i], points: g.metrics[i].loss });
      curves.push({ label: `${tag} validation`, color: COLORS[i], dash: [6, 4], points: g.metrics[i].val_loss });
    });
    state.plot = chart(plotBox, "loss: a and b", curves);
    const table = el("table", { class: "past-table past-compare" });
    table.append(el("tr", {}, el("th", { text: "" }), runCell("a", ra), runCell("b", rb)));
    // a long value (a hash) is cut short with an ellipsis: its full text on hover
    const cell = (v) => el("td", { text: v, title: v });
    const row = (name, x, y) => table.append(el("tr", {}, el("th", { text: name }), cell(x), cell(y)));
    for (const k of ["step", "loss", "best_loss", "val_loss"]) row(k.replace("_", " "), num(ra[k]), num(rb[k]));
    const names = [...new Set([...Object.keys(ra.metrics), ...Object.keys(rb.metrics)])].sort();
    for (const k of names) row(k, num(ra.metrics[k]), num(rb.metrics[k]));
    for (const [k, [x, y]] of Object.entries({ ...g.differs, ...g.plan })) {
      if (k !== "step" && k !== "status") row(k, String(x), String(y));
    }
    box.append(table);
    if (g.record_diff.length) {
      box.append(el("details", { class: "past-record" }, el("summary", { text: "how the records differ" }),
        el("pre", { text: g.record_diff.join("\n") })));
    } else {
      box.append(el("p", { class: "muted", text: "the same record text" }));
    }
    return g;
  }

  box.hidden = true;
  return { open, compare, close, state };
}
