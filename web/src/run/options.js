// The run options the panel offers: one control per entry of options.schema.json (made
// from scellis.run.options.RunOptions with the tab's defaults), so an option added to
// the engine appears here too. readOptions turns the controls back into the keywords
// the engine's train takes; a field left empty means the engine's default.

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

export const controlId = (name) => `run-${name.replace(/_/g, "-")}`;

function label(name) { return name.replace(/_/g, " "); }

function control(opt) {
  const id = controlId(opt.name);
  const title = esc(opt.doc);
  if (opt.kind === "bool") {
    const on = opt.default ? " checked" : "";
    return `<label class="run-opt" title="${title}"><input type="checkbox" id="${id}" ` +
      `data-option="${opt.name}"${on}> ${label(opt.name)}</label>`;
  }
  const step = opt.kind === "int" ? "1" : "any";
  const min = opt.low ?? opt.above;
  const value = opt.default == null ? "" : ` value="${opt.default}"`;
  const hint = opt.default == null ? ` placeholder="default"` : "";
  return `<label class="run-opt" title="${title}">${label(opt.name)} <input type="number" ` +
    `id="${id}" data-option="${opt.name}" step="${step}"` +
    `${min != null ? ` min="${min}"` : ""}${value}${hint}></label>`;
}

export function optionsHtml(schema) {
  return schema.map(control).join("");
}

// values: (name) -> the control's state (checked for a box, the text of a number field)
export function readOptions(schema, valueOf) {
  const out = {};
  for (const opt of schema) {
    const v = valueOf(opt.name);
    if (opt.kind === "bool") { out[opt.name] = Boolean(v); continue; }
    const text = String(v ?? "").trim();
    if (text === "") { out[opt.name] = opt.nullable ? null : opt.default; continue; }
    const n = Number(text);
    // a value that is not a number goes as typed: the engine says what is wrong with it
    out[opt.name] = Number.isFinite(n) ? n : text;
  }
  return out;
}
