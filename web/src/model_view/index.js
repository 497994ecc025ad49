// Model View: graph, form and code views of the one record (app.record). Every edit
// (form field, graph rewire, code typing) goes to the worker (model_api.edit / project),
// and the one result it returns re-renders all three views, so they never disagree.
// Each round trip is timed (performance.now from the edit to the end of the render of
// every view) into app.modelView.latencies for the tests and the status line.
import { createGraph } from "./graph.js";
import { createForm } from "./form.js";
import { createCode } from "./code.js";
import { injectStyles } from "./styles.js";
import { predict } from "./optimistic.js";

const TEMPLATE = `
  <div class="mv-bar">
    <h2>Model</h2>
    <span class="mv-model-id muted"></span>
    <span class="mv-status" role="status">loading…</span>
    <span class="mv-latency muted" title="edit to all three views, through the worker"></span>
    <span class="mv-spacer"></span>
    <div class="mv-tabs" role="tablist">
      <button role="tab" data-tab="graph" aria-selected="true">Graph</button>
      <button role="tab" data-tab="form">Form</button>
      <button role="tab" data-tab="code">Code</button>
    </div>
    <button class="mv-expand" title="full-screen editor: graph, form and code side by side" aria-label="full screen">⤢</button>
  </div>
  <div class="mv-panes">
    <div class="mv-pane mv-pane-graph active" data-pane="graph"><div class="mv-pane-title">Graph</div><div class="mv-graph"></div></div>
    <div class="mv-pane mv-pane-form" data-pane="form"><div class="mv-pane-title">Form</div><div class="mv-form"></div></div>
    <div class="mv-pane mv-pane-code" data-pane="code"><div class="mv-pane-title">Code</div><div class="mv-code"></div></div>
  </div>
  <ol class="mv-problems" aria-label="problems"></ol>
`;

function percentile(xs, p) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

export function mount(el, client, app) {
  injectStyles();
  el.classList.add("mv");
  el.innerHTML = TEMPLATE;
  const $ = (sel) => el.querySelector(sel);
  const state = { result: null, latencies: [], busy: 0, seq: 0, shown: 0, lastError: null };
  app.modelView = state;

  const setStatus = (text, kind) => {
    const s = $(".mv-status");
    s.textContent = text;
    s.className = `mv-status mv-status-${kind}`;
  };

  const graph = createGraph($(".mv-graph"), {
    onRewire: (block, src) => send({ kind: "rewire", block, in: src }, "rewire"),
  });
  const form = createForm($(".mv-form"), {
    onEdit: (edit) => send(edit, edit.kind),
    onError: (msg) => setStatus(msg, "bad"),
    catalog: () => state.catalog,
  });
  state.catalog = null;
  client.call("catalog", { kind: "block" }).then((c) => {
    state.catalog = c;
    if (state.result && state.result.parsed) { form.rebuild(); form.render(state.result.form, state.result.diagnostics); }
  }, () => {});
  let codeTimer = null;
  const code = createCode($(".mv-code"), {
    onChange: (text) => {
      app.record = text;
      clearTimeout(codeTimer);
      // a short pause while typing, then one projection of what is there
      codeTimer = setTimeout(() => project(text, "code", performance.now()), state.codeDelay);
    },
  });
  state.codeDelay = 120;
  state.code = code;

  function blockOfLine(form, line) {
    // the block (or pipeline entry) whose lines contain ``line``
    const starts = [
      ...Object.entries(form.blocks).map(([n, e]) => [e.line, n]),
      ...Object.entries(form.pipeline).map(([n, e]) => [e.line, n]),
    ].sort((a, b) => a[0] - b[0]);
    let hit = null;
    for (const [l, n] of starts) if (l <= line) hit = n;
    return hit;
  }

  function render(r, kind, t0) {
    // typing went on while this text was projected: a newer projection is on its way,
    // and this answer must not put the older text back under the user's cursor
    if (kind === "code" && r.text !== code.text) return;
    const seq = ++state.shown;
    state.result = r;
    if (r.text !== code.text) code.setText(r.text);
    if (app.record !== r.text) { app.record = r.text; app.emit("record", r.text); }
    code.showDiagnostics(r.diagnostics);
    if (r.parsed) {
      const diags = r.diagnostics.map((d) => ({ ...d, block: blockOfLine(r.form, d.line) }));
      graph.render(r.graph, diags);
      form.render(r.form, r.diagnostics);
      el.classList.remove("mv-stale");
    } else {
      el.classList.add("mv-stale"); // graph and form keep the last good record, dimmed
    }
    const n = r.diagnostics.length;
    if (!r.parsed) setStatus(`${r.diagnostics[0].line}:${r.diagnostics[0].col}: ${r.diagnostics[0].message}`, "bad");
    else setStatus(n ? `${n} problem${n > 1 ? "s" : ""}` : "valid", n ? "warn" : "ok");
    const mid = r.parsed && typeof r.text === "string" ? (r.text.match(/^model:\s*(\S+)/m) || [])[1] : null;
    if (mid) $(".mv-model-id").textContent = mid;
    const list = $(".mv-problems");
    list.innerHTML = "";
    for (const d of r.diagnostics) {
      const li = document.createElement("li");
      li.innerHTML = `<a href="#"><b></b> <span></span></a>`;
      li.querySelector("b").textContent = `${d.line}:${d.col}`;
      li.querySelector("span").textContent = d.message + (d.fix ? ` (${d.fix})` : "");
      li.querySelector("a").addEventListener("click", (ev) => { ev.preventDefault(); showTab("code"); code.goto(d.line, d.col); });
      list.appendChild(li);
    }
    if (t0 !== undefined) {
      const ms = performance.now() - t0;
      // ms: edit to all three views rendered; worker_ms: the round trip; py_ms: Python
      const back = performance.timeOrigin + r.answered - r.py_end; // answer: worker -> page
      state.latencies.push({ kind, ms, seq, worker_ms: r.answered - t0, py_ms: r.py_ms, back_ms: back,
        there_ms: r.answered - t0 - back - r.py_ms });
      // loading a record (first one waits for the engine to start) is not an edit
      const xs = state.latencies.filter((x) => x.kind !== "load").map((x) => x.ms);
      if (xs.length) $(".mv-latency").textContent = `${ms.toFixed(1)} ms (p50 ${percentile(xs, 50).toFixed(1)}, p95 ${percentile(xs, 95).toFixed(1)}, n=${xs.length})`;
    }
    app.emit("model-view", r);
  }

  async function run(cmd, args, kind, t0) {
    const mine = ++state.seq;
    state.busy++;
    el.dataset.busy = "1";
    try {
      const raw = await client.call(cmd, { ...args, encoded: true });
      const r = typeof raw === "string" ? JSON.parse(raw) : raw;
      r.answered = performance.now();
      // an older answer that arrives after a newer request was sent is dropped
      if (mine === state.seq) render(r, kind, t0);
      return r;
    } catch (e) {
      state.lastError = e.message;
      setStatus(e.message, "bad");
      // a refused edit leaves the text as it was: show it again
      if (state.result && state.result.parsed) form.render(state.result.form, state.result.diagnostics);
      return null;
    } finally {
      if (--state.busy === 0) delete el.dataset.busy;
    }
  }

  function project(text, kind = "load", t0 = performance.now()) {
    return run("project", { text }, kind, t0);
  }
  function fieldLine(edit) {
    const form = state.result && state.result.form;
    if (!form || edit.kind !== "set_field") return null;
    const entry = edit.block === null ? { fields: form.settings } : form.blocks[edit.block] || form.pipeline[edit.block];
    const f = entry && entry.fields.find((x) => x.name === edit.field);
    return f ? f.line : null;
  }

  function send(edit, kind) {
    const t0 = performance.now();
    const text = state.result ? state.result.text : app.record;
    if (state.optimistic && edit.kind === "set_field") {
      const guess = predict(text, fieldLine(edit), edit.field, edit.value);
      if (guess !== null) {
        code.setText(guess);
        state.predicted.push({ kind, ms: performance.now() - t0 });
      }
    }
    return run("edit", { text, edit }, kind, t0);
  }
  state.optimistic = true;
  state.predicted = []; // edit -> code view updated on the UI thread, before the worker answers
  state.project = project;
  state.send = send;
  state.stats = () => {
    const out = {};
    for (const x of state.latencies) (out[x.kind] = out[x.kind] || []).push(x.ms);
    if (state.predicted.length) out.predicted = state.predicted.map((x) => x.ms);
    return Object.fromEntries(Object.entries(out).map(([k, xs]) => [k, { n: xs.length, p50: percentile(xs, 50), p95: percentile(xs, 95) }]));
  };

  function showTab(name) {
    for (const b of el.querySelectorAll(".mv-tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
    for (const p of el.querySelectorAll(".mv-pane")) p.classList.toggle("active", p.dataset.pane === name);
  }
  for (const b of el.querySelectorAll(".mv-tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  $(".mv-expand").addEventListener("click", () => {
    const full = el.classList.toggle("mv-full");
    $(".mv-expand").textContent = full ? "✕ Close full screen" : "⤢";
    document.body.classList.toggle("mv-full-open", full);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && el.classList.contains("mv-full")) $(".mv-expand").click();
  });

  // the record changes from outside (an example picked, a dataset pinned): project it
  app.on("record", (text) => {
    if (state.result && text === state.result.text) return;
    if (text === code.text && codeTimer) return; // our own typing, already scheduled
    code.setText(text);
    project(text, "load");
  });
  if (app.record) { code.setText(app.record); project(app.record, "load"); }
}
