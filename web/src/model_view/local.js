// Model View's local answer to an edit, on the UI thread: from the view shown now (text,
// form, graph, diagnostics: the last projection, or the last local answer), the view that
// the worker's projection of the edited text should give. Only edits that can be worked
// out exactly are answered: a set_field or a rewire whose value is written on a known line,
// on a record whose only problems are shape mismatches, through blocks with a shape rule
// here. Anything else returns null and waits for the worker. Every local answer is then
// compared with the worker's (sameView); the worker's one is what stays.
import { predict, renderValue } from "./optimistic.js";
import { inferShape, ShapeMismatch } from "./shapes.js";

const SHAPE = "shape mismatch: ";

const clone = (x) => (x === undefined ? x : JSON.parse(JSON.stringify(x)));
const pyRepr = (s) => `'${s}'`; // block names are identifiers: repr is the name in quotes

function typeOne(v, t) {
  // validate._one, for the values a form or a typed scalar can give
  t = t.trim();
  if (t === "None" || t === "NoneType") return v === null;
  if (t === "bool") return typeof v === "boolean";
  if (t === "int") return Number.isInteger(v);
  if (t === "float") return typeof v === "number";
  if (t === "str") return typeof v === "string";
  return null; // a type worked out only by Python
}

function fieldOk(f, v) {
  // true when validate would find nothing wrong with this value; null when unsure
  const alts = (f.type || "").split("|").map((t) => typeOne(v, t));
  if (alts.includes(null)) return null;
  if (!alts.includes(true)) return false;
  if (f.choices && !f.choices.includes(v)) return false;
  if (typeof v === "number") {
    if (f.min !== null && f.min !== undefined && (f.exclusive_min ? v <= f.min : v < f.min)) return false;
    if (f.max !== null && f.max !== undefined && (f.exclusive_max ? v >= f.max : v > f.max)) return false;
  }
  return true;
}

function entryOf(form, block) {
  if (block === null) return { fields: form.settings };
  return form.blocks[block] || form.pipeline[block] || null;
}

// -- shapes and their problems, as validate.infer works them out --------------------------
function reproject(view, file) {
  // graph shapes and shape diagnostics of view.form + view.graph's wiring; false if unsure
  const { form, graph } = view;
  const shapes = {};
  for (const n of graph.nodes) if (n.block_id === "input") shapes[n.id] = n.out_shape;
  const diags = [];
  for (const n of graph.nodes) {
    if (n.block_id === "input") continue;
    const entry = form.blocks[n.id];
    if (!entry || entry.error || !entry.in_at) return false;
    const refs = graph.edges.filter((e) => e.to === n.id).map((e) => e.from);
    let shape = null;
    if (refs.length && refs.every((r) => shapes[r] !== null && shapes[r] !== undefined)) {
      const fields = Object.fromEntries(entry.fields.map((f) => [f.name, f.value]));
      try {
        shape = inferShape(n.block_id, fields, refs.map((r) => shapes[r]));
        if (shape === undefined) return false; // no rule on this side
      } catch (e) {
        if (!(e instanceof ShapeMismatch)) return false;
        const src = refs[Math.min(e.index, refs.length - 1)];
        // a width read from another block: the same one-click mend as the worker's
        const follows = e.field !== null && Number.isInteger(e.got);
        const d = { file, line: entry.in_at[0], col: entry.in_at[1], fix: follows ? `set ${n.id}.${e.field}: ${e.got}` : null,
          message: `${SHAPE}${pyRepr(n.id)} expects ${e.what} ${e.expected}, ${pyRepr(src)} gives ${e.got}` };
        if (follows) d.sets = { [`blocks.${n.id}.${e.field}`]: e.got };
        diags.push(d);
        shape = null;
      }
    }
    shapes[n.id] = shape;
    n.out_shape = shape;
  }
  // sorted by position, in block order on a tie (Python's sort is stable too)
  view.diagnostics = diags.map((d, i) => [d, i]).sort((a, b) => a[0].line - b[0].line || a[0].col - b[0].col || a[1] - b[1]).map((x) => x[0]);
  return true;
}

function predictable(view) {
  // the record's problems are all ones this side works out again (shape mismatches)
  return view && view.parsed && view.form && view.graph && view.diagnostics.every((d) => d.message.startsWith(SHAPE));
}

// -- the edits ------------------------------------------------------------------------------
export function applyEdit(view, edit) {
  // -> the new view, or null when this edit is left to the worker
  if (!predictable(view)) return null;
  const file = view.diagnostics.length ? view.diagnostics[0].file : "model.sml";
  if (edit.kind === "set_field") {
    if (edit.block === "data") return null; // a data edit re-hashes the dataset in Python
    const entry = entryOf(view.form, edit.block);
    const f = entry && entry.fields.find((x) => x.name === edit.field);
    if (!f || !f.line || f.set === false || fieldOk(f, edit.value) !== true) return null;
    const text = predict(view.text, f.line, edit.field, edit.value);
    if (text === null) return null;
    const next = { parsed: true, text, form: clone(view.form), graph: clone(view.graph), diagnostics: view.diagnostics };
    entryOf(next.form, edit.block).fields.find((x) => x.name === edit.field).value = edit.value;
    if (edit.block !== null && edit.block in view.form.blocks) return reproject(next, file) ? next : null;
    return next;
  }
  if (edit.kind === "rewire") {
    const entry = view.form.blocks[edit.block];
    const src = edit.in;
    if (!entry || typeof entry.in !== "string" || !entry.in_line || typeof src !== "string") return null;
    const ids = view.graph.nodes.map((n) => n.id);
    const at = ids.indexOf(edit.block), from = ids.indexOf(src);
    if (from < 0 || from >= at) return null; // a later or unknown block: validate says why
    const text = predict(view.text, entry.in_line, "in", src);
    if (text === null) return null;
    const next = { parsed: true, text, form: clone(view.form), graph: clone(view.graph), diagnostics: view.diagnostics };
    next.form.blocks[edit.block].in = src;
    // edges are listed block by block, in document order: rebuild that order
    const by = new Map();
    for (const e of next.graph.edges) (by.get(e.to) || by.set(e.to, []).get(e.to)).push(e);
    by.set(edit.block, [{ from: src, to: edit.block }]);
    next.graph.edges = ids.flatMap((id) => by.get(id) || []);
    return reproject(next, file) ? next : null;
  }
  return null;
}

// -- typed code -----------------------------------------------------------------------------
function scalar(token) {
  // the value YAML reads from one plain token, for the spellings render writes back
  // unchanged; undefined for anything else (then the worker reads it)
  let v;
  if (/^-?[0-9]+$/.test(token)) v = parseInt(token, 10);
  else if (/^-?[0-9]+\.[0-9]+$/.test(token)) v = Number(token);
  else if (token === "true" || token === "false") v = token === "true";
  else if (token === "null") v = null;
  else if (/^[A-Za-z_][A-Za-z0-9_./@-]*$/.test(token)) v = token;
  else return undefined;
  return renderValue(v) === token ? v : undefined;
}

export function editOfText(view, text) {
  // the one set_field or rewire that turns view.text into text, or null
  if (!predictable(view)) return null;
  const a = view.text.split("\n"), b = text.split("\n");
  if (a.length !== b.length) return null;
  let line = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) { if (line) return null; line = i + 1; }
  }
  if (!line) return null;
  const cands = [];
  for (const [name, e] of Object.entries(view.form.blocks)) {
    for (const f of e.fields) if (f.line === line) cands.push({ kind: "set_field", block: name, field: f.name });
    if (e.in_line === line) cands.push({ kind: "rewire", block: name });
  }
  for (const [name, e] of Object.entries(view.form.pipeline))
    for (const f of e.fields) if (f.line === line) cands.push({ kind: "set_field", block: name, field: f.name });
  for (const f of view.form.settings) if (f.line === line) cands.push({ kind: "set_field", block: null, field: f.name });
  const hits = [];
  for (const c of cands) {
    const key = c.kind === "rewire" ? "in" : c.field;
    const m = new RegExp(`(^|[\\s{,])${key}:\\s*([^\\s,}#'"[{]+)`).exec(b[line - 1]);
    const v = m ? scalar(m[2]) : undefined;
    if (v === undefined) continue;
    const edit = c.kind === "rewire" ? { ...c, in: v } : { ...c, value: v };
    const next = applyEdit(view, edit);
    if (next && next.text === text) hits.push({ edit, next });
  }
  return hits.length === 1 ? hits[0] : null;
}

// -- the check against the worker -------------------------------------------------------------
function same(x, y) {
  if (x === y) return true;
  if (typeof x !== "object" || typeof y !== "object" || x === null || y === null) return false;
  if (Array.isArray(x) !== Array.isArray(y)) return false;
  const kx = Object.keys(x), ky = Object.keys(y);
  if (kx.length !== ky.length) return false;
  return kx.every((k) => Object.prototype.hasOwnProperty.call(y, k) && same(x[k], y[k]));
}

export function sameView(local, r) {
  // the local answer shows exactly what the worker's projection shows
  const diag = (d) => ({ file: d.file, line: d.line, col: d.col, message: d.message, fix: d.fix ?? null });
  return local.text === r.text && r.parsed === true && same(local.form, r.form) && same(local.graph, r.graph)
    && same(local.diagnostics.map(diag), r.diagnostics.map(diag));
}
