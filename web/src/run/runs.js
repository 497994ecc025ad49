// The run panel's list of recorded runs: the worker's persistent store (IDBFS under
// /scellis, kept in IndexedDB). A run left `running` by a tab that died reads
// `interrupted` and offers Resume; every run that is not running lists its checkpoints
// and resumes from any one of them (later metrics and checkpoints are dropped: the
// resumed run replays those steps). Any run can be exported as a bundle file
// (`scellis runs import FILE` continues it natively) and a bundle can be imported back.
export const STORE = "/scellis/store";

export function mountRuns(el, client, app, resume) {
  el.innerHTML = `
    <h3>Runs <button id="runs-refresh" title="reload the list">↻</button>
      <label class="button">Import bundle <input id="runs-import" type="file" hidden></label></h3>
    <table id="runs-table"><thead><tr><th>run</th><th>model</th><th>status</th>
      <th>step</th><th>checkpoint</th><th></th></tr></thead><tbody></tbody></table>`;
  const body = el.querySelector("tbody");
  const state = { list: [] };

  function button(text, cls, fn) {
    const b = document.createElement("button");
    b.textContent = text;
    b.className = cls;
    b.addEventListener("click", fn);
    return b;
  }

  function render() {
    body.innerHTML = "";
    for (const r of state.list) {
      const tr = document.createElement("tr");
      tr.dataset.run = r.id;
      tr.dataset.status = r.status;
      for (const v of [r.id, r.model || "", r.status, r.step, r.checkpoint_step ?? "–"]) {
        const td = document.createElement("td");
        td.textContent = String(v);
        tr.appendChild(td);
      }
      const td = document.createElement("td");
      // a done run's checkpoint at its last step has nothing left to train
      const from = r.status === "running" ? []
        : (r.checkpoints || []).filter((s) => r.status !== "done" || s < r.step);
      if (from.length) {
        const pick = document.createElement("select");
        pick.className = "run-from";
        pick.title = "the checkpoint to resume from";
        for (const s of from) pick.add(new Option(`step ${s}`, String(s)));
        pick.value = String(from[from.length - 1]);
        td.appendChild(pick);
        td.appendChild(button("Resume", "run-resume", () => {
          // the latest: the latest that loads (a damaged one is skipped, named)
          const step = Number(pick.value);
          const opts = step === from[from.length - 1] && r.status !== "done" ? {} : { step };
          resume(r.id, opts).catch(() => {});
        }));
      }
      if (r.checkpoint_step != null) {
        td.appendChild(button("Export", "run-export", () => exportRun(r.id)));
      }
      tr.appendChild(td);
      body.appendChild(tr);
    }
  }

  async function refresh() {
    if (app.storeAway) {
      // another window (detached run, or its tab) holds the store: no copy of it here
      body.innerHTML = "<tr><td colspan=6 class=muted>the run store is with another window</td></tr>";
      return state.list;
    }
    try {
      state.list = await client.call("runs", { store: STORE });
    } catch (e) {
      state.list = [];
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
  el.querySelector("#runs-import").addEventListener("change", async (ev) => {
    const f = ev.target.files[0];
    if (!f) return;
    const u8 = new Uint8Array(await f.arrayBuffer());
    let bin = "";
    for (let i = 0; i < u8.length; i += 0x8000) {
      bin += String.fromCharCode(...u8.subarray(i, i + 0x8000));
    }
    await client.call("import_run", { data: btoa(bin), store: STORE });
    ev.target.value = "";
    refresh();
  });
  state.refresh = refresh;
  state.exportRun = exportRun;
  return state;
}
