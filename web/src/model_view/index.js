// Model View: graph, form and code views of the one record. A form edit, a graph rewire
// or a typed value that can be worked out on the UI thread (local.js) is shown in all three
// views at once, from the view shown now; every edit also goes to the worker
// (model_api.edit / project), whose projection is what stays: it replaces the local one,
// and the two are compared (a disagreement is counted and the worker's view is shown).
// Each edit is timed into app.modelView.latencies: ms (edit to every view showing it),
// local_ms (the UI thread's answer, when there was one) and confirmed_ms (edit to the
// worker's answer rendered), with the worker round trip split into its parts.
import { createGraph } from "./graph.js";
import { createForm } from "./form.js";
import { createCode } from "./code.js";
import { injectStyles } from "./styles.js";
import { applyEdit, editOfText, sameView } from "./local.js";
import { inferShape, ShapeMismatch, RULES } from "./shapes.js";

const TEMPLATE = `
  <div class="mv-bar">
    <h2>Model</h2>
    <span class="mv-model-id muted"></span>
    <span class="mv-status" role="status">loading…</span>
    <!-- edit-to-views timing for tests and developers: a data attribute, never shown -->
    <span class="mv-latency" hidden></span>
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

function afterPaint(t0, done) {
  // the time from t0 to just after the next frame is painted: a message posted from the
  // frame's animation callback is handled once that frame's rendering is done
  requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => done(performance.now() - t0);
    ch.port2.postMessage(0);
  });
}

function painted(local) {
  // local.painted_ms once known; an entry waiting for it is filled in then
  afterPaint(local.t0, (ms) => {
    local.painted_ms = ms;
    if (local.entry) fillPainted(local.entry, local);
  });
}

function fillPainted(entry, local) {
  entry.local_painted_ms = local.painted_ms;
  if (entry.agreed) entry.painted_ms = local.painted_ms;
}

// one block field is a form edit (worked out on the UI thread too); more is set_paths
function fixEdit(sets) {
  const paths = Object.keys(sets);
  const parts = paths.length === 1 ? paths[0].split(".") : [];
  if (parts.length === 3 && parts[0] === "blocks") return { kind: "set_field", block: parts[1], field: parts[2], value: sets[paths[0]] };
  return { kind: "set_paths", set: sets };
}

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
  // result: the worker's last projection; view: what the three views show now (that
  // projection, or a local answer on top of it)
  const state = { result: null, view: null, latencies: [], busy: 0, seq: 0, shown: 0, lastError: null };
  app.modelView = state;

  const setStatus = (text, kind) => {
    const s = $(".mv-status");
    s.textContent = text;
    s.title = text; // the pill may be cut short: the whole message on hover
    s.className = `mv-status mv-status-${kind}`;
  };

  const graph = createGraph($(".mv-graph"), {
    onRewire: (block, src) => send({ kind: "rewire", block, in: src }, "rewire"),
    onOpen: () => setFull(true), // a node double-clicked: the full-screen editor, as ⤢ opens
  });
  const form = createForm($(".mv-form"), {
    onEdit: (edit) => send(edit, edit.kind),
    onError: (msg) => setStatus(msg, "bad"),
    catalog: () => state.catalog,
    optimizers: () => state.optimizers,
  });
  state.catalog = null;
  state.optimizers = null;
  const fetchCatalog = () => Promise.all([
    client.call("catalog", { kind: "block" }), client.call("catalog", { kind: "optimizer" }),
  ]).then(([blocks, optimizers]) => {
    state.catalog = blocks;
    state.optimizers = optimizers;
    if (state.view && state.view.parsed) { form.rebuild(); form.render(state.view.form, state.view.diagnostics); }
  }, () => {});
  fetchCatalog();
  // a user's extension loaded (run/extension_load.js): new entries to pick, and the
  // record checked again against them
  app.on("catalog", () => fetchCatalog().then(() => { if (app.record) project(app.record, "load"); }));
  let codeTimer = null;
  const code = createCode($(".mv-code"), {
    onChange: (text) => {
      const t0 = performance.now();
      app.record = text;
      clearTimeout(codeTimer);
      // a typed value the UI thread can read: form and graph follow at once
      const hit = state.local ? editOfText(state.view, text) : null;
      const predict = performance.now() - t0;
      let local = null;
      if (hit) {
        const parts = show(hit.next, true);
        local = { view: hit.next, ms: performance.now() - t0, parts, predict_ms: predict, t0 };
        painted(local);
      }
      // a short pause while typing, then one projection of what is there (the pause is
      // not counted in confirmed_ms: its clock starts when the projection is sent)
      codeTimer = setTimeout(() => { codeTimer = null; project(text, "code", performance.now(), local); }, state.codeDelay);
    },
  });
  state.codeDelay = 120;
  state.code = code;
  state.local = true; // answer what it can on the UI thread (off: every edit waits for the worker)

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

  let shownProblems = "";
  let announced = null; // the last record text any panel announced (a "record" event)
  app.on("record", (text) => { announced = text; });
  function show(v, local = false) {
    // put one view (a projection or a local answer) in all three views; a full layout is
    // forced at the end, so the time measured after it includes the page's own layout work.
    // Returns the time of each part (ms), for the latency breakdown.
    const parts = {};
    let t = performance.now();
    const lap = (k) => { const n = performance.now(); parts[k] = n - t; t = n; };
    state.view = v;
    if (v.text !== code.text) code.setText(v.text);
    // every text the views show is announced once, typed code included (the code view
    // sets app.record as the user types, before any projection): the memory plan, the
    // data labels and Train's validity follow each edit, whichever view made it. Typed
    // code is announced once the worker has projected it, not at each key
    if (app.record !== v.text || (!local && announced !== v.text)) { app.record = v.text; app.emit("record", v.text); }
    const key = JSON.stringify(v.diagnostics);
    if (key !== shownProblems) code.showDiagnostics(v.diagnostics);
    lap("code");
    if (v.parsed) {
      const diags = v.diagnostics.map((d) => ({ ...d, block: blockOfLine(v.form, d.line) }));
      graph.render(v.graph, diags, { quick: local });
      lap("graph");
      form.render(v.form, v.diagnostics);
      lap("form");
      el.classList.remove("mv-stale");
    } else {
      el.classList.add("mv-stale"); // graph and form keep the last good record, dimmed
    }
    const n = v.diagnostics.length;
    if (!v.parsed) setStatus(`${v.diagnostics[0].line}:${v.diagnostics[0].col}: ${v.diagnostics[0].message}`, "bad");
    else setStatus(n ? `${n} problem${n > 1 ? "s" : ""}` : "valid", n ? "warn" : "ok");
    const mid = v.parsed && typeof v.text === "string" ? (v.text.match(/^model:\s*(\S+)/m) || [])[1] : null;
    if (mid) $(".mv-model-id").textContent = mid;
    if (key !== shownProblems) {
      shownProblems = key;
      const list = $(".mv-problems");
      list.innerHTML = "";
      for (const d of v.diagnostics) {
        const li = document.createElement("li");
        li.innerHTML = `<a href="#"><b></b> <span></span></a>`;
        li.querySelector("b").textContent = `${d.line}:${d.col}`;
        // a mend offered as a button is not also said in words
        li.querySelector("span").textContent = d.message + (d.fix && !d.sets ? ` (${d.fix})` : "");
        li.querySelector("a").addEventListener("click", (ev) => { ev.preventDefault(); showTab("code"); code.goto(d.line, d.col); });
        if (d.sets) li.appendChild(fixButton(d));
        list.appendChild(li);
      }
    }
    lap("status");
    void el.offsetHeight; // style and layout now, inside the measured time
    lap("layout");
    return parts;
  }

  // a problem with a certain mend (a block that reads a width another block sets):
  // one click applies it, as the form would
  function fixButton(d) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "mv-fix";
    b.textContent = `Fix: ${d.fix}`;
    b.title = "apply this edit to the record";
    b.addEventListener("click", () => send(fixEdit(d.sets), "fix"));
    return b;
  }

  function showLatency() {
    // loading a record (the first one waits for the engine to start) is not an edit
    const xs = state.latencies.filter((x) => x.kind !== "load" && x.kind !== "follow");
    if (!xs.length) return;
    const all = xs.map((x) => x.ms), conf = xs.map((x) => x.confirmed_ms);
    $(".mv-latency").dataset.latency = `${xs[xs.length - 1].ms.toFixed(1)} ms (p50 ${percentile(all, 50).toFixed(1)}, p95 ${percentile(all, 95).toFixed(1)};`
      + ` worker-confirmed p50 ${percentile(conf, 50).toFixed(1)}, p95 ${percentile(conf, 95).toFixed(1)}; n=${xs.length})`;
  }

  function render(r, kind, t0, local) {
    // typing went on while this text was projected: a newer projection is on its way,
    // and this answer must not put the older text back under the user's cursor
    if (kind === "code" && r.text !== code.text) return;
    const seq = ++state.shown;
    state.result = r;
    const agreed = local ? sameView(local.view, r) : null;
    const parts = show(r);
    if (t0 !== undefined) {
      const confirmed = performance.now() - t0;
      // worker_ms: the round trip; py_ms: Python; back_ms: the answer's way to the page
      const back = performance.timeOrigin + r.answered - r.py_end;
      const entry = {
        kind, seq, confirmed_ms: confirmed, local_ms: local ? local.ms : null, agreed,
        // the views showed this edit from the local answer on only when it was right
        ms: agreed ? local.ms : confirmed,
        local_parts: local ? { predict: local.predict_ms, ...local.parts } : null, render_parts: parts,
        worker_ms: r.answered - t0, py_ms: r.py_ms, back_ms: back, there_ms: r.answered - t0 - back - r.py_ms,
      };
      // painted_ms: the same two clocks, to the end of the frame that shows it
      afterPaint(t0, (ms) => {
        entry.confirmed_painted_ms = ms;
        if (!entry.agreed) entry.painted_ms = ms;
      });
      if (local) { local.entry = entry; if (local.painted_ms !== undefined) fillPainted(entry, local); }
      state.latencies.push(entry);
      if (agreed === false) state.disagreed.push({ kind, local: local.view, worker: r });
      showLatency();
    }
    app.emit("model-view", r);
    followData(r, kind);
  }

  // an edit here of the record's data counts (window, horizon): the inputs, the head and
  // the comments follow, as a data-panel change makes them (model_api.follow). base: the
  // last text in step with its counts; a half-typed count waits for the rest
  let followBase = null;
  const dataPart = (text) => (text.match(/^data:.*(?:\n(?:[ \t#].*|))*/m) || [""])[0];
  async function followData(r, kind) {
    if (!r.parsed) return;
    if (kind === "load" || kind === "follow" || followBase === null) { followBase = r.text; return; }
    if (dataPart(r.text) === dataPart(followBase)) { followBase = r.text; return; }
    const base = followBase;
    let out;
    try { out = await client.call("follow", { before: base, text: r.text }); } catch (e) { return; }
    // typing went on meanwhile: the next projection follows from the same base
    if (code.text !== r.text || followBase !== base || !out.settled) return;
    followBase = out.text;
    if (out.text === r.text) return;
    code.setText(out.text);
    app.record = out.text;
    project(out.text, "follow");
  }

  async function run(cmd, args, kind, t0, local) {
    const mine = ++state.seq;
    state.busy++;
    el.dataset.busy = "1";
    try {
      const raw = await client.call(cmd, { ...args, encoded: true });
      const r = typeof raw === "string" ? JSON.parse(raw) : raw;
      r.answered = performance.now();
      // an older answer that arrives after a newer request was sent is dropped
      if (mine === state.seq) render(r, kind, t0, local);
      return r;
    } catch (e) {
      state.lastError = e.message;
      // a refused edit leaves the text as it was: show the last projection again
      if (state.result && mine === state.seq) show(state.result);
      setStatus(e.message, "bad");
      return null;
    } finally {
      if (--state.busy === 0) delete el.dataset.busy;
    }
  }

  function project(text, kind = "load", t0 = performance.now(), local = null) {
    return run("project", { text }, kind, t0, local);
  }

  function send(edit, kind) {
    const t0 = performance.now();
    // the view shown, unless typing has left it behind the code (then the last projection)
    const base = state.view && state.view.text === code.text ? state.view : state.result;
    const text = base ? base.text : app.record;
    const next = state.local && base ? applyEdit(base, edit) : null;
    const parts0 = performance.now() - t0; // working the answer out
    let local = null;
    if (next) {
      const parts = show(next, true);
      local = { view: next, ms: performance.now() - t0, parts, predict_ms: parts0, t0 };
      painted(local);
    }
    return run("edit", { text, edit }, kind, t0, local);
  }
  // the UI thread's shape rules, for the test that holds them to the Python ones
  state.shapes = { ids: Object.keys(RULES), infer: (id, fields, inputs) => {
    try { return { shape: inferShape(id, fields, inputs) }; } catch (e) {
      return e instanceof ShapeMismatch ? { mismatch: [e.what, e.expected, e.got, e.index] } : { error: String(e) };
    }
  } };
  state.disagreed = []; // local answers the worker did not confirm (shown: the worker's)
  state.project = project;
  state.send = send;
  state.stats = () => {
    // per kind: p50/p95 of "every view shows the edit" (ms) and of "worker-confirmed"
    const by = {};
    for (const x of state.latencies) (by[x.kind] = by[x.kind] || []).push(x);
    const pc = (xs) => ({ p50: percentile(xs, 50), p95: percentile(xs, 95) });
    return Object.fromEntries(Object.entries(by).map(([k, xs]) => [k, {
      n: xs.length, local: xs.filter((x) => x.agreed).length,
      all_views: pc(xs.map((x) => x.ms)), confirmed: pc(xs.map((x) => x.confirmed_ms)),
    }]));
  };

  function showTab(name) {
    for (const b of el.querySelectorAll(".mv-tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
    for (const p of el.querySelectorAll(".mv-pane")) p.classList.toggle("active", p.dataset.pane === name);
  }
  for (const b of el.querySelectorAll(".mv-tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  function setFull(full) {
    el.classList.toggle("mv-full", full);
    $(".mv-expand").textContent = full ? "✕ Close full screen" : "⤢";
    document.body.classList.toggle("mv-full-open", full);
  }
  $(".mv-expand").addEventListener("click", () => setFull(!el.classList.contains("mv-full")));
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && el.classList.contains("mv-full")) $(".mv-expand").click();
  });

  // the record changes from outside (an example picked, a dataset pinned): project it
  app.on("record", (text) => {
    if (state.result && text === state.result.text) return;
    if (state.view && text === state.view.text) return; // a local answer, shown already
    if (text === code.text && codeTimer) return; // our own typing, already scheduled
    code.setText(text);
    project(text, "load");
  });
  if (app.record) { code.setText(app.record); project(app.record, "load"); }
}
