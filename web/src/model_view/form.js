// Model View's form: per block (and per pipeline entry) its fields from the catalog
// schema, with type, default, range and doc. A value is checked here first (type, range,
// choices: shown at once, nothing sent); a valid one is sent as a set_field edit, and the
// worker's diagnostics for that field's line are shown beside it.

function parseValue(raw, f) {
  // -> {ok, value} or {ok: false, error}
  const type = f.type || "str";
  const alts = type.split("|").map((t) => t.trim());
  const s = raw.trim();
  if (s === "" && alts.includes("None")) return { ok: true, value: null };
  if (f.choices) {
    const hit = f.choices.find((c) => String(c) === s);
    return hit === undefined ? { ok: false, error: `one of ${f.choices.join(" | ")}` } : { ok: true, value: hit };
  }
  for (const t of alts) {
    if (t === "int" && /^[-+]?\d+$/.test(s)) return range(parseInt(s, 10), f);
    if (t === "float" && s !== "" && isFinite(Number(s))) return range(Number(s), f);
    if (t === "bool" && (s === "true" || s === "false")) return { ok: true, value: s === "true" };
    if (t === "str" && s !== "") return { ok: true, value: s };
    if (/^(tuple|list)/.test(t)) {
      try { const v = JSON.parse(s); if (Array.isArray(v)) return { ok: true, value: v }; } catch (e) { /* next */ }
    }
  }
  return { ok: false, error: `must be ${type}` };
}

function range(v, f) {
  if (f.min !== null && f.min !== undefined && (f.exclusive_min ? v <= f.min : v < f.min))
    return { ok: false, error: `must be ${f.exclusive_min ? ">" : ">="} ${f.min}` };
  if (f.max !== null && f.max !== undefined && (f.exclusive_max ? v >= f.max : v > f.max))
    return { ok: false, error: `must be ${f.exclusive_max ? "<" : "<="} ${f.max}` };
  return { ok: true, value: v };
}

function show(v) {
  if (v === null || v === undefined) return "";
  return Array.isArray(v) || typeof v === "object" ? JSON.stringify(v) : String(v);
}

function hint(f) {
  const parts = [];
  if (f.required) parts.push("required");
  else parts.push(`default ${show(f.default) || "none"}`);
  if (f.min !== null && f.min !== undefined) parts.push(`${f.exclusive_min ? ">" : "≥"} ${f.min}`);
  if (f.max !== null && f.max !== undefined) parts.push(`${f.exclusive_max ? "<" : "≤"} ${f.max}`);
  return parts.join(" · ");
}

function readsText(entry) {
  return `in: ${Array.isArray(entry.in) ? entry.in.join(", ") : entry.in}`;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function addBlockRow(form, catalog, onEdit) {
  // name + catalog block id + position: an add_block edit (required fields are then
  // reported by validation beside the new block, ready to fill in)
  const row = el("div", "mv-add");
  const name = el("input", "mv-add-name");
  name.placeholder = "new block name"; name.setAttribute("aria-label", "new block name"); name.spellcheck = false;
  const kind = el("select", "mv-add-kind");
  kind.setAttribute("aria-label", "block type");
  for (const e of catalog) { const o = el("option", "", e.id); o.value = e.id; o.title = e.doc; kind.appendChild(o); }
  const after = el("select", "mv-add-after");
  after.setAttribute("aria-label", "insert after");
  const names = Object.keys(form.blocks);
  for (const n of names) { const o = el("option", "", `after ${n}`); o.value = n; o.selected = n === names[names.length - 1]; after.appendChild(o); }
  const btn = el("button", "mv-add-btn", "Add block");
  btn.addEventListener("click", () => {
    const n = name.value.trim();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) { name.classList.add("bad"); return; }
    name.classList.remove("bad");
    // by default the new block reads the block it follows
    onEdit({ kind: "add_block", name: n, block_id: kind.value, after: after.value, in: after.value });
  });
  row.append(name, kind, after, btn);
  return row;
}

// The optimizer card's picker: every registered optimizer (a user's loaded extension's
// too); a pick replaces the section, keeping lr where the new one takes it.
function optimizerPick(entry, choices, onEdit) {
  const pick = el("select", "mv-block-id mv-pick");
  pick.setAttribute("aria-label", "optimizer");
  for (const c of choices) { const o = el("option", "", c.id); o.value = c.id; o.title = c.doc; pick.appendChild(o); }
  pick.value = entry.block_id;
  pick.addEventListener("change", () => {
    const next = { block_id: pick.value };
    const lr = entry.fields.find((f) => f.name === "lr");
    const takes = choices.find((c) => c.id === pick.value)?.fields.some((f) => f.name === "lr");
    if (lr && lr.value != null && takes) next.lr = lr.value;
    onEdit({ kind: "set_paths", set: { optimizer: next } });
  });
  return pick;
}

export function createForm(root, { onEdit, onError, catalog, optimizers = () => null }) {
  let signature = "";
  const inputs = new Map(); // "block/field" -> {input, msg, f}
  const reading = new Map(); // block -> its "in:" line (updated in place: a rewire keeps the cards)

  function fieldRow(card, block, f) {
    const row = el("div", "mv-field");
    row.dataset.field = f.name;
    const label = el("label", "mv-field-label");
    const nameEl = el("span", "mv-field-name", f.name);
    nameEl.title = f.name;
    label.append(nameEl, el("span", "mv-type", f.type));
    const id = `mv-f-${block || "top"}-${f.name}`;
    label.htmlFor = id;
    let input;
    if (f.choices) {
      input = el("select");
      for (const c of f.choices) { const o = el("option", "", String(c)); o.value = String(c); input.appendChild(o); }
    } else if (f.type === "bool") {
      input = el("select");
      for (const c of ["true", "false"]) { const o = el("option", "", c); o.value = c; input.appendChild(o); }
    } else {
      input = el("input");
      input.type = "text";
      input.spellcheck = false;
      if (/^(int|float)/.test(f.type)) input.inputMode = "decimal";
    }
    input.id = id;
    input.name = f.name;
    input.dataset.block = block || "";
    const msg = el("div", "mv-msg");
    const doc = el("div", "mv-hint", hint(f) + (f.doc ? ` — ${f.doc}` : ""));
    doc.title = f.doc || "";
    const check = () => {
      const p = parseValue(input.value, f);
      row.classList.toggle("invalid", !p.ok);
      msg.textContent = p.ok ? "" : `${f.name} ${p.error}`;
      return p;
    };
    input.addEventListener("input", check);
    input.addEventListener("change", () => {
      const p = check();
      if (p.ok) onEdit({ kind: "set_field", block, field: f.name, value: p.value });
      else onError && onError(`${f.name} ${p.error}`);
    });
    row.append(label, input, doc, msg);
    card.appendChild(row);
    inputs.set(`${block}/${f.name}`, { input, msg, row, f });
  }

  function entryCard(title, kindLabel, entry, block, removable) {
    const card = el("section", "mv-card");
    card.dataset.block = block;
    const head = el("header", "mv-card-head");
    if (removable) {
      const name = el("input", "mv-block-name");
      name.value = block; name.setAttribute("aria-label", `name of block ${block}`); name.spellcheck = false;
      name.addEventListener("change", () => {
        const v = name.value.trim();
        if (v && v !== block) onEdit({ kind: "rename_block", old: block, new: v });
      });
      head.appendChild(name);
    } else head.appendChild(el("span", "mv-card-title", title));
    const choices = kindLabel === "optimizer" ? optimizers() : null;
    if (choices && choices.some((c) => c.id === entry.block_id)) head.appendChild(optimizerPick(entry, choices, onEdit));
    else head.appendChild(el("span", "mv-block-id", entry.block_id || kindLabel));
    if (removable) {
      const rm = el("button", "mv-remove", "✕");
      rm.title = `remove block ${block}`;
      rm.addEventListener("click", () => onEdit({ kind: "remove_block", name: block }));
      head.appendChild(rm);
    }
    card.appendChild(head);
    if (entry.doc) card.appendChild(el("p", "mv-doc", entry.doc));
    if (entry.error) card.appendChild(el("div", "mv-msg", entry.error));
    if ("in" in entry) {
      const reads = el("div", "mv-reads", readsText(entry));
      card.appendChild(reads);
      reading.set(block, reads);
    }
    const body = el("div", "mv-fields");
    for (const f of entry.fields) fieldRow(body, block, f);
    card.appendChild(body);
    return card;
  }

  function sig(form) {
    const b = Object.entries(form.blocks).map(([n, e]) => [n, e.block_id, e.fields.map((f) => f.name), "in" in e]);
    const p = Object.entries(form.pipeline).map(([n, e]) => [n, e.block_id, e.fields.map((f) => f.name)]);
    const picks = (optimizers() || []).map((c) => c.id);
    return JSON.stringify([b, p, form.settings.map((s) => s.name), picks]);
  }

  function build(form) {
    root.innerHTML = "";
    inputs.clear();
    reading.clear();
    const blocks = el("div", "mv-group");
    blocks.appendChild(el("h3", "mv-group-title", "Blocks"));
    for (const [name, e] of Object.entries(form.blocks)) blocks.appendChild(entryCard(name, "block", e, name, true));
    if (catalog() && catalog().length) blocks.appendChild(addBlockRow(form, catalog(), onEdit));
    const pipe = el("div", "mv-group");
    pipe.appendChild(el("h3", "mv-group-title", "Training"));
    if (form.settings.length) {
      const card = el("section", "mv-card");
      card.dataset.block = "";
      card.appendChild(el("header", "mv-card-head")).appendChild(el("span", "mv-card-title", "run"));
      const body = el("div", "mv-fields");
      for (const s of form.settings) fieldRow(body, null, { ...s, default: null, required: true, doc: "" });
      card.appendChild(body);
      pipe.appendChild(card);
    }
    for (const [sec, e] of Object.entries(form.pipeline)) pipe.appendChild(entryCard(sec, sec, e, sec, false));
    root.append(blocks, pipe);
  }

  function render(form, diagnostics = []) {
    const s = sig(form);
    if (s !== signature) { build(form); signature = s; }
    for (const [name, e] of Object.entries(form.blocks)) {
      const reads = reading.get(name);
      if (reads && "in" in e && reads.textContent !== readsText(e)) reads.textContent = readsText(e);
    }
    const byLine = new Map();
    for (const d of diagnostics) byLine.set(d.line, d);
    const fields = [
      ...Object.entries(form.blocks).flatMap(([n, e]) => e.fields.map((f) => [n, f])),
      ...Object.entries(form.pipeline).flatMap(([n, e]) => e.fields.map((f) => [n, f])),
      ...form.settings.map((f) => [null, f]),
    ];
    for (const [block, f] of fields) {
      const slot = inputs.get(`${block}/${f.name}`);
      if (!slot) continue;
      const v = show(f.value);
      if (document.activeElement !== slot.input || !slot.row.classList.contains("invalid")) {
        if (slot.input.value !== v) slot.input.value = v;
      }
      slot.input.classList.toggle("mv-set", f.set !== false);
      const d = f.line ? byLine.get(f.line) : null;
      slot.row.classList.toggle("invalid", !!d);
      slot.msg.textContent = d ? `${d.line}:${d.col}: ${d.message}` : "";
    }
  }

  return { render, rebuild() { signature = ""; } };
}
