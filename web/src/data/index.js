// The data panel: load a CSV or text file (picker or drag-and-drop), choose the value
// column and an optional datetime column, preview the table and plot the series, then
// pin it in the record: the worker saves the file, computes its sha256 with the same
// code as native scellis.data, and writes source + sha256 into the record's data section.
// The data options (value and datetime columns, window, horizon, validation split,
// normalisation, missing policy) stay editable once pinned: a change pins again (the
// options are part of the dataset's version) and what the panel then names comes from
// the pinned data section the engine wrote.
import { drawSeries } from "./plot.js";
import { injectStyles } from "../model_view/styles.js";

const TEMPLATE = `
  <h2>Data</h2>
  <div class="dp">
    <div class="dp-drop">
      Drop a CSV or text file here, or <button type="button" class="dp-choose">choose a file</button>
      <input type="file" class="dp-file" accept=".csv,.txt,.tsv,text/csv,text/plain" hidden aria-label="data file">
      <div class="muted dp-help">A CSV trains the LSTM forecaster on one numeric column; a text file trains the char Transformer.</div>
      <div class="muted dp-current">Training uses the example's own data.</div>
    </div>
    <div class="dp-error" role="alert"></div>
    <div class="dp-switched" role="status" hidden></div>
    <div class="dp-own" hidden>
      <div class="dp-meta"><b class="dp-own-name"></b><span class="dp-own-size muted"></span></div>
      <div class="dp-own-chart"><svg class="dp-plot dp-own-plot" role="img" aria-label="the example's series"></svg></div>
      <div class="dp-wrap"><table class="dp-table dp-own-table"></table></div>
      <div class="dp-text dp-own-text"></div>
    </div>
    <div class="dp-loaded" hidden>
      <div class="dp-meta"><b class="dp-name"></b><span class="dp-size muted"></span><span class="dp-freq muted"></span></div>
      <div class="dp-cols dp-csv-only">
        <label>value column <select class="dp-value" aria-label="value column"></select></label>
        <label>datetime column <select class="dp-time" aria-label="datetime column"></select></label>
      </div>
      <div class="dp-missing dp-csv-only" role="status" hidden>
        <span class="dp-missing-text"></span>
        <label>Fill them by <select class="dp-missing-policy" aria-label="how missing values are filled">
          <option value="ffill">carrying the previous value forward (ffill)</option>
          <option value="mean">the training rows' mean (mean)</option>
          <option value="drop">dropping those rows (drop)</option>
          <option value="error">refusing to train (error)</option>
        </select></label>
      </div>
      <div class="dp-options">
        <label class="dp-csv-only">window <span class="dp-unit"></span> <input type="number" class="dp-opt" data-key="window" min="1" step="1"></label>
        <label class="dp-csv-only">horizon <span class="dp-unit"></span> <input type="number" class="dp-opt" data-key="horizon" min="1" step="1"></label>
        <label>validation fraction <input type="number" class="dp-opt" data-key="val_fraction" min="0.01" max="0.99" step="0.05"></label>
        <label class="dp-csv-only">normalise <select class="dp-opt" data-key="normalise">
          <option value="standard">standard (z-score)</option><option value="minmax">min–max</option>
          <option value="window">window (each window's own mean and spread)</option>
          <option value="change">change (from each window's last value)</option>
          <option value="season">season (change from one season back)</option>
          <option value="none">none</option></select></label>
      </div>
      <div class="muted dp-advice dp-csv-only" role="status" hidden></div>
      <div class="dp-csv-only"><svg class="dp-plot" role="img" aria-label="series preview"></svg></div>
      <div class="dp-wrap dp-csv-only"><table class="dp-table"></table></div>
      <div class="dp-text dp-text-only"></div>
      <div class="dp-meta"><button class="primary dp-use"></button><span class="dp-pinned"></span></div>
    </div>
  </div>`;

// the button's two labels: the prompts name the one it shows
const USE = "Use in record";
const AGAIN = "Pin again";
// what each example trains on; a file of the other kind trains the example made for it
const EXAMPLE_KIND = { lstm_forecaster: "csv", tcn_forecaster: "csv", char_transformer: "text" };
const FOR_KIND = {
  csv: { example: "lstm_forecaster", model: "the LSTM forecaster", what: "a table" },
  text: { example: "char_transformer", model: "the char Transformer", what: "text" },
};
const MODEL = { lstm_forecaster: "the LSTM forecaster", tcn_forecaster: "the TCN forecaster",
  char_transformer: "the char Transformer" };

export function mount(el, client, app) {
  injectStyles();
  el.innerHTML = TEMPLATE;
  const $ = (s) => el.querySelector(s);
  const state = { file: null, info: null };
  app.dataPanel = state;

  const error = (msg) => { $(".dp-error").textContent = msg || ""; };
  // pinned: the loaded file is the record's data (an option change pins it again)
  const setUse = (pinned) => { $(".dp-use").textContent = pinned ? AGAIN : USE; };
  setUse(false);
  const switched = (text) => { $(".dp-switched").textContent = text; $(".dp-switched").hidden = !text; };

  // the example that trains a file of this kind, when the record is an example made for
  // the other kind (the drop zone's promise); null: the record takes the file as it is
  function exampleFor(kind) {
    const has = EXAMPLE_KIND[app.recordName];
    return has && has !== kind ? FOR_KIND[kind] : null;
  }

  async function loadFile(file) {
    // the earlier file's preview goes the moment this one is picked, before it is even
    // read: its rows must never stand for this one's
    const name = file.name;
    error("");
    switched("");
    ownAsked += 1; // the record's own preview gives way to this file, even one on its way
    $(".dp-own").hidden = true;
    $(".dp-loaded").hidden = true;
    $(".dp-current").textContent = `reading ${name}…`;
    const isCsv = /\.(csv|tsv)$/i.test(name);
    try {
      const text = await file.text();
      state.file = { name, text };
      state.info = await client.call(isCsv ? "load_table" : "load_text", { name, text });
    } catch (e) {
      // nothing of an earlier file stays on show beside this file's problem
      error(e.message);
      state.info = null;
      $(".dp-loaded").hidden = true;
      $(".dp-current").textContent = `${name} cannot be used; training uses ${app.dataset ? app.dataset.name : "the example's own data"}.`;
      return;
    }
    setUse(false); // this file is not pinned yet, whatever was before it
    const to = exampleFor(state.info.kind);
    $(".dp-current").textContent = to
      ? `${name} is loaded: press “${USE}” below to train ${to.model} on it ` +
        `(${MODEL[app.recordName]} does not train on ${to.what}).`
      : `${name} is loaded: press “${USE}” below to train on it.`;
    showInfo();
    for (const input of el.querySelectorAll(".dp-opt")) delete input.dataset.edited;
    await fillOptions();
  }

  function option(sel, value, label, selected) {
    const o = document.createElement("option");
    o.value = value; o.textContent = label; o.selected = selected;
    sel.appendChild(o);
  }

  function showInfo() {
    const info = state.info;
    // one preview at a time: the record's own may have landed while this file was read
    $(".dp-own").hidden = true;
    $(".dp-loaded").hidden = false;
    $(".dp-name").textContent = info.name;
    $(".dp-pinned").textContent = "";
    $(".dp-freq").textContent = "";
    const csv = info.kind === "csv";
    for (const n of el.querySelectorAll(".dp-csv-only")) n.hidden = !csv;
    for (const n of el.querySelectorAll(".dp-text-only")) n.hidden = csv;
    if (!csv) {
      $(".dp-size").textContent = `${info.chars.toLocaleString()} characters, ${info.vocab} distinct`;
      $(".dp-loaded .dp-text").textContent = info.preview;
      return;
    }
    $(".dp-size").textContent = `${info.rows} rows × ${info.columns.length} columns`;
    const vsel = $(".dp-value"), tsel = $(".dp-time");
    vsel.innerHTML = ""; tsel.innerHTML = "";
    const value = info.series ? info.series.column : null;
    for (const c of info.numeric) option(vsel, c, c, c === value);
    option(tsel, "", "(none: row order)", true);
    for (const c of Object.keys(info.datetime)) option(tsel, c, `${c} (${info.datetime[c]})`, false);
    const guess = Object.keys(info.datetime).find((c) => c !== value);
    if (guess) tsel.value = guess;
    drawTable();
    showMissing();
    plot();
    showSpacing();
    showAdvice(info.advice, null);
  }

  // what the series suggests (a trend test and the season) and why, in one line; once
  // pinned, whether the record took it (a record's own normalisation stands)
  function showAdvice(advice, applied) {
    const line = $(".dp-advice");
    line.hidden = !advice;
    if (!advice) return;
    const norm = `normalise “${advice.normalise}”: ${advice.why}.`;
    const lead = applied === true ? `Pinned with ${norm.replace(":", " (picked from the data):")}`
      : applied === false ? `The record's own normalisation stands; the data suggests ${norm}`
        : `From the data: ${norm}`;
    const season = advice.season
      ? ` Season ${advice.season}: ${advice.season_why} (used by the seasonal-naive baseline).`
      : ` No season: ${advice.season_why}.`;
    line.textContent = lead + season;
  }

  // how far apart the rows are (the chosen datetime column's spacing, else the first
  // column of dates'): the unit of the window and the horizon
  function showSpacing() {
    const info = state.info;
    const freqs = (info && info.frequency) || {};
    const col = $(".dp-time").value || Object.keys(freqs).find((c) => c !== $(".dp-value").value);
    const f = col ? freqs[col] : null;
    const t = info ? info.columns.indexOf(col) : -1;
    $(".dp-freq").textContent = f && t >= 0 ? `${f.name}, ${info.preview[0][t]} to ${info.last[t]}` : "";
    for (const u of el.querySelectorAll(".dp-unit")) u.textContent = `(${f ? f.unit : "row"}s)`;
  }

  // the option controls start from the record's data section (the example's values);
  // ``all``: once a file is pinned the record is the truth, edited controls included
  async function fillOptions(all = false) {
    let data = {};
    try { data = await client.call("data_section", { record: app.record }); } catch (e) { /* defaults */ }
    setOptions(data, all);
  }

  // the controls show ``data`` (a data section), the engine's defaults where it is silent
  function setOptions(data, all) {
    const csv = state.info && state.info.kind === "csv";
    const defaults = csv ? { window: 20, horizon: 1, val_fraction: 0.2, normalise: "standard" } : { val_fraction: 0.1 };
    for (const input of el.querySelectorAll(".dp-opt")) {
      if (input.dataset.edited && !all) continue; // the user's value stands until pinned
      const v = data[input.dataset.key] ?? defaults[input.dataset.key];
      if (v !== undefined) input.value = input.dataset.key === "normalise" && v === "zscore" ? "standard" : String(v);
    }
  }

  // the options the user set, for this file's kind (the others stay as the record has them)
  function options() {
    const csv = state.info.kind === "csv";
    const out = {};
    for (const input of el.querySelectorAll(".dp-opt")) {
      const k = input.dataset.key;
      if (!csv && k !== "val_fraction") continue;
      if (input.value === "" || !input.dataset.edited) continue;
      out[k] = input.tagName === "SELECT" ? input.value : Number(input.value);
    }
    return out;
  }

  // gaps in the value column: said plainly, with the record's `missing` policy beside
  function showMissing() {
    const info = state.info;
    const rows = (info.missing || {})[$(".dp-value").value] || [];
    $(".dp-missing").hidden = !rows.length;
    if (!rows.length) return;
    const some = rows.slice(0, 5).join(", ") + (rows.length > 5 ? ", …" : "");
    $(".dp-missing-text").textContent = `${rows.length} of ${info.rows} values of ` +
      `“${$(".dp-value").value}” are missing (data rows ${some}). `;
  }

  function plot() {
    const info = state.info;
    if (!info || !info.series) return;
    const t = info.columns.indexOf($(".dp-time").value);
    const ends = t >= 0 && info.preview.length ? [info.preview[0][t], info.last[t]] : null;
    drawSeries($(".dp-loaded .dp-plot"), info.series, info.series.column, ends);
  }

  function drawTable(t = $(".dp-loaded .dp-table"), info = state.info, value = $(".dp-value").value,
    time = $(".dp-time").value) {
    t.innerHTML = "";
    const head = t.createTHead().insertRow();
    info.columns.forEach((c) => {
      const th = document.createElement("th");
      th.textContent = c;
      if (c === value) th.className = "dp-value";
      if (c === time) th.className = "dp-time";
      head.appendChild(th);
    });
    const body = t.createTBody();
    const MISSING = new Set(["", "na", "n/a", "nan", "null", "none", "?"]);
    for (const row of info.preview) {
      const tr = body.insertRow();
      for (const cell of row) {
        const td = tr.insertCell();
        td.textContent = cell;
        if (MISSING.has(cell.trim().toLowerCase())) { td.className = "dp-na"; td.title = "missing"; }
      }
    }
  }

  $(".dp-value").addEventListener("change", async () => {
    const column = $(".dp-value").value;
    try {
      state.info = await client.call("load_table", { name: state.file.name, text: state.file.text, column });
      drawTable();
      showMissing();
      plot();
      showAdvice(state.info.advice, null);
    } catch (e) { error(e.message); return; }
    repin();
  });
  $(".dp-time").addEventListener("change", () => { drawTable(); plot(); showSpacing(); repin(); });
  $(".dp-missing-policy").addEventListener("change", () => repin());
  for (const input of el.querySelectorAll(".dp-opt")) {
    input.addEventListener("change", () => { input.dataset.edited = "1"; repin(); });
  }

  // a pinned file whose options change is pinned again (before the pin: at “Use in record”)
  function repin() {
    if (app.dataset && state.file && app.dataset.name === state.file.name) return pin();
    return null;
  }

  async function pin() {
    error("");
    const note = await switchModel();
    if (note) switched(note);
    const csv = state.info.kind === "csv";
    const args = { record: app.record, name: state.file.name, text: state.file.text, options: options() };
    if (csv) {
      args.column = $(".dp-value").value;
      if ($(".dp-time").value) args.datetime = $(".dp-time").value;
      if (!$(".dp-missing").hidden) args.missing = $(".dp-missing-policy").value;
    }
    let out;
    try { out = await client.call("dataset_from", args); } catch (e) { error(e.message); return null; }
    app.dataset = out.dataset;
    app.record = out.record;
    app.emit("record", out.record);
    app.emit("dataset", out.dataset);
    showPinned(out.dataset);
    const told = out.dataset.advice;
    if (told) showAdvice(told, told.applied);
    return out;
  }
  state.pin = pin;

  // a file of the other kind than the example's data: that example gives way to the one
  // made for the file, as the drop zone promises; the note says so and how to go back
  async function switchModel() {
    const to = exampleFor(state.info.kind);
    if (!to || !app.loadExample) return "";
    const from = MODEL[app.recordName];
    await app.loadExample(to.example, { keep: true });
    return `${state.file.name} is ${to.what}, which ${from} does not train on: the model is ` +
      `now ${to.model}, trained on your file. Pick another example under “1. Pick an example” to go back.`;
  }

  // what is pinned, named from the data section the engine wrote
  function showPinned(d) {
    const data = d.data || {};
    setOptions(data, true); // the controls say what the pinned text below says
    const pinned = $(".dp-pinned");
    pinned.innerHTML = "";
    const h = document.createElement("span");
    h.className = "dp-hash"; h.title = d.hash; h.textContent = `sha256 ${d.hash.slice(0, 12)}…`;
    const extra = d.warning ? ` — ${d.warning}` : d.train_windows !== undefined ? ` — ${d.train_windows} training windows${d.val_windows !== undefined ? `, ${d.val_windows} validation` : ""}` : "";
    pinned.append(h, document.createTextNode(extra));
    setUse(true); // pinned already: an option change pins by itself
    const parts = [];
    if (data.column) parts.push(`value column “${data.column}”`);
    if (data.datetime) parts.push(`times from “${data.datetime}”`);
    // in the rows' own unit once the engine has read their spacing
    const unit = d.labels && d.labels.frequency ? d.labels.frequency.unit : null;
    const count = (n) => (unit ? ` ${unit}${n === 1 ? "" : "s"}` : "");
    if (d.labels && d.labels.frequency) parts.push(d.labels.frequency.name);
    if (data.window) parts.push(`window ${data.window}${count(data.window)}`);
    if (data.horizon) parts.push(`horizon ${data.horizon}${count(data.horizon)}`);
    if (data.val_fraction) parts.push(`${Math.round(data.val_fraction * 100)}% for validation`);
    if (data.normalise) parts.push(`normalise ${data.normalise}`);
    if (data.missing) parts.push(`missing values: ${data.missing}`);
    // the control shows what was pinned (the data's pick included), unless the user set it
    const norm = el.querySelector('.dp-opt[data-key="normalise"]');
    if (data.normalise && !norm.dataset.edited) norm.value = data.normalise === "zscore" ? "standard" : data.normalise;
    $(".dp-current").textContent = `Pinned: ${d.name} (${d.format}${parts.length ? `; ${parts.join(", ")}` : ""}). ` +
      "Change an option above and it is pinned again.";
  }

  $(".dp-use").addEventListener("click", () => pin());

  // a record with no data section (an imported model) trains once a file is pinned here
  const OWN = "Training uses the example's own data.";
  const NONE = "This model has no data yet: drop a CSV or text file here to train it.";
  const ownData = (text) => (/^data:/m.test(text) ? OWN : NONE);
  function sayOwnData(text) {
    const el = $(".dp-current");
    if (el.textContent === OWN || el.textContent === NONE) el.textContent = ownData(text);
  }

  // the pin lives in the record: once a record without the saved file comes in (another
  // example, an edit of data.source), runs use that record's data, and the panel says so
  app.on("record", (text) => {
    // a loaded file not pinned yet: its controls show the new record's options
    if (state.info && !app.dataset) fillOptions();
    if (!app.dataset) { sayOwnData(text); return; }
    if (text.includes(app.dataset.source)) return; // the next pin shows its options
    app.dataset = null;
    if (state.info) fillOptions(true); // the loaded file's controls: the new record's
    setUse(false);
    $(".dp-current").textContent = ownData(text);
    $(".dp-pinned").textContent = "";
  });

  // a record that names a file pinned before (a draft restored after a reload: the
  // worker kept the file) trains on it, and the panel says so
  app.on("labels", (labels) => {
    const cur = $(".dp-current");
    if (app.dataset) return;
    if (labels && !labels.own) {
      const what = labels.kind === "csv" ? ` (value column “${labels.target}”${labels.frequency ? `, ${labels.frequency.name}` : ""})` : "";
      cur.textContent = `Training uses ${labels.file}${what}, pinned in the record.`;
      cur.dataset.kept = "1";
    } else if (cur.dataset.kept) {
      delete cur.dataset.kept;
      cur.textContent = ownData(app.record);
    }
  });

  // the record's own data (an example's bundled file, or one pinned before) while no
  // file is loaded here: what a newly picked example trains on, never an earlier file's
  let ownAsked = 0, engineUp = false, ownSource = null;
  // the data section's source line: an edit that changes it changes the preview too
  const sourceOf = (text) => (/^data:[^]*?^\s+source:\s*(\S+)/m.exec(text) || [])[1] || null;
  app.on("record", (text) => {
    if (engineUp && !state.info && sourceOf(text) !== ownSource) showOwn();
  });
  async function showOwn() {
    const mine = ++ownAsked;
    ownSource = sourceOf(app.record);
    $(".dp-own").hidden = true;
    let info = null;
    try { info = await client.call("record_data", { record: app.record }); } catch (e) { /* none shown */ }
    if (mine !== ownAsked || state.info || !info) return;
    $(".dp-own").hidden = false;
    $(".dp-own-name").textContent = info.name;
    const csv = info.kind === "csv";
    for (const n of [$(".dp-own-chart"), $(".dp-own-table").parentElement]) n.hidden = !csv;
    $(".dp-own-text").hidden = csv;
    if (!csv) {
      $(".dp-own-size").textContent = `${info.chars.toLocaleString()} characters, ${info.vocab} distinct`;
      $(".dp-own-text").textContent = info.preview;
      return;
    }
    $(".dp-own-size").textContent = `${info.rows} rows × ${info.columns.length} columns`;
    // no column marked: the panel finds its own controls by those marks' class names
    drawTable($(".dp-own-table"), info, "", "");
    if (info.series) drawSeries($(".dp-own-plot"), info.series, info.series.column, null);
  }
  app.on("engine", () => { engineUp = true; if (!state.info) showOwn(); });

  // another example picked, or a model imported: what the panel showed of an earlier
  // file goes, its prompt about the earlier model with it, and the new record's own data
  // shows (keep: the panel picked the example itself, for the file it holds)
  app.on("example", ({ keep } = {}) => {
    if (keep) return;
    state.file = null;
    state.info = null;
    error("");
    switched("");
    $(".dp-loaded").hidden = true;
    for (const input of el.querySelectorAll(".dp-opt")) delete input.dataset.edited;
    if (!app.dataset) $(".dp-current").textContent = ownData(app.record);
    if (engineUp) showOwn();
  });

  $(".dp-choose").addEventListener("click", () => $(".dp-file").click());
  $(".dp-file").addEventListener("change", (ev) => { if (ev.target.files[0]) loadFile(ev.target.files[0]); });
  const drop = $(".dp-drop");
  for (const t of ["dragenter", "dragover"]) drop.addEventListener(t, (ev) => { ev.preventDefault(); drop.classList.add("over"); });
  for (const t of ["dragleave", "drop"]) drop.addEventListener(t, () => drop.classList.remove("over"));
  drop.addEventListener("drop", (ev) => {
    ev.preventDefault();
    const f = ev.dataTransfer && ev.dataTransfer.files[0];
    if (f) loadFile(f);
  });
}
