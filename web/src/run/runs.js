// The run panel's list of recorded runs: the worker's persistent store (IDBFS under
// /scellis, kept in IndexedDB). A run left `running` by a tab that died reads
// `interrupted` and offers Resume; every run that is not running lists its checkpoints
// and resumes from any one of them (later metrics and checkpoints are dropped: the
// resumed run replays those steps; from an older checkpoint than the last, a new run
// branches off and is listed with its parent). Any run opens below the list (its
// curves, final metrics, options, record) and two ticked runs compare. Any run can be
// exported as a bundle file (`scellis runs import FILE` continues it natively) and a
// bundle can be imported back.
import { mountPast } from "./past.js";
import { startedAt } from "./show.js";

export const STORE = "/scellis/store";

// the filters as the engine's runs command takes them (scellis runs --where ...)
function filters(el) {
  const v = (id) => el.querySelector(`#${id}`).value.trim() || null;
  return { where: v("runs-where"), model: v("runs-model"), dataset: v("runs-dataset") };
}

export function mountRuns(el, client, app, resume, share = null) {
  el.innerHTML = `
    <h3>Runs <button id="runs-refresh" title="reload the list" aria-label="reload the list of runs">↻</button>
      <button id="runs-import-button" type="button" title="continue a run exported from another tab or the command line">Import bundle</button>
      <input id="runs-import" type="file" accept=".tar,application/x-tar" hidden aria-label="run bundle file"></h3>
    <form id="runs-filter" class="runs-filter" aria-label="filter the runs">
      <label>where <input id="runs-where" placeholder="val_loss < 1 and loss < 2"
        title="metric names, < <= > >= == !=, numbers, and/or: a name is the run's last value, min(NAME) / max(NAME) its lowest / highest"></label>
      <label>model <input id="runs-model" placeholder="namespace/name" size="14"></label>
      <label>dataset <input id="runs-dataset" placeholder="hash prefix" size="10"></label>
      <button type="submit" id="runs-filter-apply">Filter</button></form>
    <div id="runs-message" role="status" aria-live="polite"></div>
    <input id="runs-link" class="runs-link" readonly hidden aria-label="link to the run">
    <div class="runs-compare"><button id="runs-compare" type="button" disabled>Compare</button>
      <span class="muted" id="runs-compare-hint">tick two runs to compare them</span></div>
    <table id="runs-table"><thead><tr><th>run</th><th>status</th>
      <th>step</th><th>check&shy;point</th></tr></thead><tbody></tbody></table>
    <div id="runs-past" class="runs-past" aria-live="polite"></div>`;
  const body = el.querySelector("tbody");
  const state = { list: [], picked: [] };
  // a run opened below the list goes to Model View as a model to edit and train further
  async function editRun(id) {
    try {
      const got = await client.call("run_record", { run: id, store: STORE });
      app.importer.openModel(got.name, got.record);
      const said = `run ${id} is in Model View with its weights from step ${got.step}: edit it, then Train fine-tunes it`;
      message(said, "ok");
      // once another model is shown, the line is about a model no longer there
      const off = app.on("record", () => {
        if (app.recordName === `imported:${got.name}`) return;
        off();
        if (el.querySelector("#runs-message").textContent === said) message("");
      });
    } catch (e) { message(e.message, "error"); }
  }
  const past = mountPast(el.querySelector("#runs-past"), client, STORE, editRun);
  state.past = past;

  // the two runs ticked last are the ones compared
  function tick(id, on) {
    state.picked = state.picked.filter((x) => x !== id);
    if (on) state.picked.push(id);
    if (state.picked.length > 2) state.picked.shift();
    for (const box of body.querySelectorAll(".run-pick")) box.checked = state.picked.includes(box.value);
    const ready = state.picked.length === 2;
    el.querySelector("#runs-compare").disabled = !ready;
    el.querySelector("#runs-compare-hint").textContent = ready
      ? `compare ${state.picked[0]} (a) with ${state.picked[1]} (b)` : "tick two runs to compare them";
  }

  // the run's id, with a tick box to compare it and, for a branch, its parent
  function idCell(r) {
    const td = document.createElement("td");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "run-pick";
    box.value = r.id;
    box.checked = state.picked.includes(r.id);
    box.addEventListener("change", () => tick(r.id, box.checked));
    const label = document.createElement("label");
    label.className = "run-id";
    // a narrow window may break the id after its start time, never inside a number
    const cut = r.id.lastIndexOf("-") + 1;
    label.append(box, ` ${r.id.slice(0, cut)}`, document.createElement("wbr"), r.id.slice(cut));
    td.appendChild(label);
    if (r.parent) {
      const [from, step] = r.parent.split("@");
      const link = document.createElement("a");
      link.href = `#run-${from}`;
      link.textContent = `${from} at step ${step}`;
      link.addEventListener("click", (ev) => {
        ev.preventDefault();
        const row = body.querySelector(`tr[data-run="${from}"]`);
        if (row) { row.scrollIntoView({ block: "nearest" }); row.classList.add("run-flash"); }
        setTimeout(() => row && row.classList.remove("run-flash"), 1500);
      });
      const note = document.createElement("div");
      note.className = "run-parent muted";
      note.append("↳ branch of ", link);
      td.appendChild(note);
    }
    return td;
  }

  function button(text, cls, fn) {
    const b = document.createElement("button");
    b.textContent = text;
    b.className = cls;
    b.addEventListener("click", fn);
    return b;
  }

  const message = (text, level = "info") => {
    const m = el.querySelector("#runs-message");
    m.className = text ? `runs-message runs-${level}` : "";
    m.textContent = text;
  };

  function render() {
    body.innerHTML = "";
    if (!state.list.length) {
      body.innerHTML = '<tr class="runs-empty"><td colspan=4 class=muted>No runs yet: ' +
        "press Train and the run is recorded here, with its checkpoints to resume from.</td></tr>";
      return;
    }
    for (const r of state.list) {
      const tr = document.createElement("tr");
      tr.dataset.run = r.id;
      tr.dataset.status = r.status;
      if (r.parent) tr.dataset.parent = r.parent;
      const first = idCell(r);
      tr.appendChild(first);
      // the step of the run's own max steps (a resume to more steps counts to those)
      const step = r.max_steps ? `${r.step}/${r.max_steps}` : r.step;
      for (const [v, cls] of [[r.status, "run-status"], [step, "run-step"], [r.checkpoint_step ?? "–", "run-ckpt"]]) {
        const td = document.createElement("td");
        td.textContent = String(v);
        td.className = cls;
        tr.appendChild(td);
      }
      // the model and the run's actions sit under its id: a narrow panel (a 1024 px
      // window, a phone) keeps Open and Resume in view without scrolling sideways
      const model = document.createElement("div");
      model.className = "run-model muted";
      const read = Object.entries(r.matched || {}).map(([k, x]) => `${k} ${x == null ? "–" : x.toPrecision(4)}`);
      // runs of one model read apart by their record's hash and start time
      const made = [r.record ? `record ${r.record.slice(0, 8)}` : "", r.started ? startedAt(r.started) : ""];
      model.textContent = [r.model || "", ...made, ...read].filter(Boolean).join(" · ");
      const td = document.createElement("div");
      td.className = "run-actions";
      td.appendChild(button("Open", "run-open", () => past.open(r.id).catch((e) => message(e.message, "error"))));
      // every checkpoint, the last one included: a finished run continues from it with
      // a larger max steps
      const from = r.status === "running" ? [] : (r.checkpoints || []);
      if (from.length) {
        const pick = document.createElement("select");
        pick.className = "run-from";
        pick.title = "the checkpoint to resume from (an older one than the last starts a branch: a new run)";
        for (const s of from) pick.add(new Option(`step ${s}`, String(s)));
        pick.value = String(from[from.length - 1]);
        // a visible label: a title alone is not one for screen readers or touch users
        const label = document.createElement("label");
        label.className = "run-from-label";
        label.append("from ", pick);
        td.appendChild(label);
        td.appendChild(button("Resume", "run-resume", () => {
          // the latest: the latest that loads (a damaged one is skipped, named)
          const step = Number(pick.value);
          const opts = step === from[from.length - 1] ? {} : { step };
          if (r.status === "done" && step >= r.step) {
            // a finished run trains on only to a larger max steps (the run panel's)
            const more = Number(document.getElementById("run-max-steps")?.value);
            if (!(more > r.step)) {
              message(`run ${r.id} finished at step ${r.step}: set “max steps” above ` +
                `${r.step} in the run options, then Resume to train it further`);
              return;
            }
            opts.max_steps = more;
          }
          message("");
          resume(r.id, opts).catch(() => {});
        }));
      }
      if (r.checkpoint_step != null) {
        td.appendChild(button("Export", "run-export", () => exportRun(r.id)));
      }
      if (share && r.status !== "running") td.appendChild(button("Link", "run-link", () => share().copy(r.id)));
      first.append(model, td);
      body.appendChild(tr);
    }
  }

  // nothing can be imported into a store that is away, nor listed from it
  app.on("store-away", (away) => {
    for (const id of ["runs-import-button", "runs-refresh"]) el.querySelector(`#${id}`).disabled = away;
  });

  async function refresh() {
    if (app.storeAway) {
      // another window (detached run, or its tab) holds the store: no copy of it here
      body.innerHTML = "<tr><td colspan=4 class=muted>the run store is with another window</td></tr>";
      return state.list;
    }
    const filter = filters(el);
    try {
      state.list = await client.call("runs", { store: STORE, ...filter });
      if (Object.values(filter).some((x) => x)) {
        const n = state.list.length;
        message(`${n} ${n === 1 ? "run matches" : "runs match"} the filter`);
      }
    } catch (e) {
      state.list = [];
      if (Object.values(filter).some((x) => x)) message(`filter: ${e.message}`, "error");
    }
    render();
    app.emit("runs", state.list);
    return state.list;
  }

  async function exportRun(id) {
    // the bundle crosses the worker boundary as base64 text (JSON-safe)
    const b64 = await client.call("export_run", { run: id, store: STORE });
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const blob = new Blob([bytes], { type: "application/x-tar" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `scellis-run-${id}.tar`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }

  el.querySelector("#runs-refresh").addEventListener("click", () => refresh());
  el.querySelector("#runs-filter").addEventListener("submit", (ev) => { ev.preventDefault(); refresh(); });
  el.querySelector("#runs-compare").addEventListener("click", () => {
    const [a, b] = state.picked;
    past.compare(a, b).catch((e) => message(e.message, "error"));
  });
  el.querySelector("#runs-import-button").addEventListener("click", () => el.querySelector("#runs-import").click());
  async function importBundle(f) {
    message("");
    const u8 = new Uint8Array(await f.arrayBuffer());
    let bin = "";
    for (let i = 0; i < u8.length; i += 0x8000) {
      bin += String.fromCharCode(...u8.subarray(i, i + 0x8000));
    }
    let out;
    try {
      out = await client.call("import_run", { data: btoa(bin), store: STORE });
    } catch (e) {
      const why = e.message.replace(/ is already in \S+$/, " is already in this tab's run list");
      message(`${f.name} was not imported: ${why}`, "error");
      return null;
    }
    const id = (out && (out.run || out.id)) || (typeof out === "string" ? out : "");
    message(`imported ${f.name}${id ? ` as run ${id}` : ""}: resume it from the list`, "ok");
    await refresh();
    return out;
  }
  el.querySelector("#runs-import").addEventListener("change", async (ev) => {
    const f = ev.target.files[0];
    if (!f) return;
    await importBundle(f);
    ev.target.value = "";
  });
  state.importBundle = importBundle;
  state.refresh = refresh;
  state.exportRun = exportRun;
  state.message = message;
  return state;
}
