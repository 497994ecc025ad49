// Optimistic rendering of a form edit: the new value is written into the code view on
// the UI thread at once (the field's line is known from the last projection), before
// the worker's answer arrives; that answer then replaces the text if it differs. Only
// a scalar written on its own "key: value" line or inside a one-line flow mapping is
// predicted; anything else waits for the worker.
const PLAIN = /^[A-Za-z_][A-Za-z0-9_./@-]*$/;
const RESERVED = new Set(["true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"]);

export function renderValue(v) {
  // the same spelling as scellis.sml.document.render, for the values a form sends
  if (v === null) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : null;
  if (typeof v === "string") return PLAIN.test(v) && !RESERVED.has(v.toLowerCase()) ? v : JSON.stringify(v);
  return null; // lists and mappings: left to the worker
}

export function predict(text, line, field, value) {
  // -> the new text, or null when this edit is not predicted
  const spelled = renderValue(value);
  if (spelled === null || !line) return null;
  const lines = text.split("\n");
  const src = lines[line - 1];
  if (src === undefined) return null;
  const key = new RegExp(`(^|[\\s{,])${field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\s*`);
  const m = key.exec(src);
  if (!m) return null;
  const start = m.index + m[0].length;
  const rest = src.slice(start);
  const tok = /^[^\s,}#'"[{]+/.exec(rest);
  if (!tok) return null;
  lines[line - 1] = src.slice(0, start) + spelled + rest.slice(tok[0].length);
  return lines.join("\n");
}
