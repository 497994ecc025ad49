// Import model: the user's own model into the tab. Files picked (one model file, several
// files of one model), a folder picked whole (a Hugging Face folder, a TF.js export), or
// either dropped on the start strip or Model View go to the worker, which writes them
// into Pyodide's file system and runs the engine's import (webapp/import_api.py, the
// code `scellis import` runs). The imported record replaces the one shown, its weights
// named in its header so Train starts from them; a refusal is one line here and leaves
// the record, the data and the runs as they were.
import { readDropped } from "./dropped.js";
import { mountFinetune } from "./finetune.js";

const TEMPLATE = `
  <button type="button" class="import-files">Import model…</button>
  <button type="button" class="import-folder" title="a Hugging Face folder (config.json, *.safetensors, tokenizer.json) or a TF.js export (model.json and its .bin shards)">Import a model folder…</button>
  <input type="file" class="import-files-input" multiple hidden
    aria-label="model files to import (.onnx, .safetensors, .pt, model.json with its .bin shards)"
    accept=".onnx,.safetensors,.pt,.pth,.bin,.json">
  <input type="file" class="import-folder-input" webkitdirectory hidden aria-label="a model folder to import">
  <span class="muted import-kinds">ONNX, Hugging Face (GPT-2, Llama, BERT…), TF.js, or a state dict</span>
  <div class="import-status" role="status" aria-live="polite" hidden></div>
`;

const size = (n) => (n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(0)} KB` : `${(n / (1 << 20)).toFixed(1)} MB`);

export function mount(slot, client, app, dropTargets = []) {
  slot.innerHTML = TEMPLATE;
  slot.classList.add("import");
  const $ = (sel) => slot.querySelector(sel);
  const state = { busy: false, last: null, error: null };
  app.importer = state; // tests read the last import (or refusal) here
  mountFinetune(slot, app);
  const picker = document.getElementById("run-example"); // in the start strip by now

  function say(text, kind) {
    const s = $(".import-status");
    s.hidden = false;
    s.className = `import-status import-${kind}`;
    s.textContent = text;
  }

  // the example picker shows what Model View holds: a disabled entry for the import,
  // gone once the user picks an example again
  function markPicker(name) {
    if (!picker) return;
    let opt = picker.querySelector("option[data-imported]");
    if (!opt) {
      opt = new Option("", "", false, false);
      opt.dataset.imported = "1";
      opt.disabled = true;
      picker.add(opt, 0);
      picker.addEventListener("change", () => opt.remove(), { once: true });
    }
    opt.textContent = `your model: ${name}`;
    picker.value = "";
    opt.selected = true;
  }

  // the model replaces the one shown: as on an example pick, the data panel drops a file
  // loaded for the earlier model, and its prompt about that model; a state dict mapped
  // onto the record shown keeps the record's pinned file (app.dataset stays), and the
  // panel keeps showing it
  function show(name, record) {
    app.recordName = `imported:${name}`;
    app.record = record;
    app.emit("record", record);
    app.emit("example", { name: app.recordName, keep: Boolean(app.dataset) });
    markPicker(name);
  }

  async function importFiles(files) {
    if (!files.length || state.busy) return;
    state.busy = true;
    slot.dataset.busy = "1";
    const total = files.reduce((n, f) => n + f.size, 0);
    // a folder picked whole is named by its folder, loose files by their count
    const tops = new Set(files.map((f) => f.path.split("/")[0]));
    const folder = tops.size === 1 && files[0].path.includes("/") ? `${[...tops][0]} (${files.length} files)` : null;
    const label = files.length === 1 ? files[0].path : folder || `${files.length} files`;
    say(`importing ${label} (${size(total)})…`, "busy");
    try {
      // the File objects themselves: the worker reads each part when the engine asks
      const payload = files.map((f) => ({ path: f.path, bytes: f.file }));
      const got = await client.call("import_files", { files: payload, record_text: app.record || null });
      state.error = null;
      state.last = got;
      show(got.name, got.record);
      const kind = got.codec.replace("codec/", "").toUpperCase().replace("HF", "Hugging Face").replace("TFJS", "TF.js");
      const parts = [`Imported ${got.name} (${kind}): ${got.blocks.length} blocks, ${got.parameters.toLocaleString()} parameters, shown in Model View`];
      if (got.session_only) parts.push(got.session_only);
      if (got.added) parts.push("an optimizer and a loss were added (edit them in the Form)");
      parts.push("pick how to fine-tune it below (LoRA, or QLoRA for the least memory)");
      parts.push(got.needs_data ? "then drop a CSV or text file on the Data panel and press Train" : "then press Train");
      say(`${parts.join(" · ")}.`, "ok");
      checkForward(got);
    } catch (e) {
      state.error = e.message;
      say(`Could not import ${label}: ${e.message}. The model shown is unchanged.`, "bad");
    } finally {
      state.busy = false;
      delete slot.dataset.busy;
    }
  }

  // the imported weights run on this GPU: one forward on sample inputs, said in a line
  async function checkForward(got) {
    try {
      const out = await client.call("forward", { record_text: got.record });
      state.forward = out;
      if (state.last === got) say(`${$(".import-status").textContent} It runs on your GPU: output [${out.shape.join(", ")}] on a sample input.`, "ok");
    } catch (e) {
      state.forward = { error: e.message };
      if (state.last === got) say(`${$(".import-status").textContent} A sample forward failed: ${e.message}`, "bad");
    }
  }

  // an example picked after an import (or a refusal): the line is about a model no
  // longer shown, so it goes
  if (picker) picker.addEventListener("change", () => { $(".import-status").hidden = true; });

  const picked = (input) => [...input.files].map((f) => ({ file: f, size: f.size, path: f.webkitRelativePath || f.name }));
  for (const [button, input] of [[".import-files", ".import-files-input"], [".import-folder", ".import-folder-input"]]) {
    $(button).addEventListener("click", () => $(input).click());
    $(input).addEventListener("change", () => { importFiles(picked($(input))); $(input).value = ""; });
  }

  // files dropped on a target are a model to import; caught on the way down (capture),
  // so the code editor inside Model View never pastes a dropped file's bytes as text
  const hasFiles = (ev) => ev.dataTransfer && [...ev.dataTransfer.types].includes("Files");
  for (const target of [slot.closest("#start-here") || slot, ...dropTargets]) {
    target.addEventListener("dragover", (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      target.classList.add("import-drop");
    }, true);
    target.addEventListener("dragleave", () => target.classList.remove("import-drop"));
    target.addEventListener("drop", async (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      ev.stopPropagation();
      target.classList.remove("import-drop");
      importFiles(await readDropped(ev.dataTransfer));
    }, true);
  }
  state.importFiles = importFiles;
  // a model with its weights from elsewhere (a past run reopened): shown as an import is,
  // so its fine-tune choice and its draft follow
  state.openModel = (name, record) => show(name, record);
  // an imported model restored at load (drafts.js) is named in the picker as after its import
  if (app.recordName.startsWith("imported:")) markPicker(app.recordName.slice("imported:".length));
}
