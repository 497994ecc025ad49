// Run by tests/web/test_run_panel_schema.py under node: the run panel's event handlers
// and option controls against the engine's schemas (argv: events schema, options schema).
import { readFileSync } from "node:fs";
import { HANDLERS, showEvent } from "../../web/src/run/show.js";
import { optionsHtml, readOptions } from "../../web/src/run/options.js";

const events = JSON.parse(readFileSync(process.argv[2], "utf8"));
const options = JSON.parse(readFileSync(process.argv[3], "utf8"));
const problems = [];

// a value of a JSON schema type, random where it can be
function valueOf(spec, name) {
  const types = (spec.type || ["string"]).filter((t) => t !== "null");
  const t = types[0] || "null";
  const r = Math.random();
  if (t === "integer") return 1 + Math.floor(r * 100);
  if (t === "number") return 0.1 + r;
  if (t === "boolean") return r < 0.5;
  if (t === "string") return name === "verdict" ? "green" : `s${Math.floor(r * 1e6)}`;
  if (t === "array") return [];
  if (t === "object" && name === "metrics") return { loss: [[1, r]] };
  if (t === "object") return name === "tier" ? { name: "debug" } : {};
  return null;
}

for (const [kind, def] of Object.entries(events.$defs)) {
  if (!HANDLERS[kind]) { problems.push(`no handler for event kind ${kind}`); continue; }
  const ev = { kind };
  for (const [name, spec] of Object.entries(def.properties)) {
    if (name !== "kind") ev[name] = valueOf(spec, name);
  }
  const els = {};
  const logged = [];
  const ctx = {
    $: (id) => (els[id] ??= { textContent: "", className: "", style: {}, dataset: {} }),
    state: { total: 10, marks: [], step0: 0, t0: 0 },
    curves: { add: (...a) => logged.push(["curve", ...a]) },
    log: (t) => logged.push(["log", t]),
    renderSample: (el, e) => logged.push(["sample", e.type]),
  };
  try {
    showEvent(ctx, ev);
  } catch (e) {
    problems.push(`the ${kind} handler failed on ${JSON.stringify(ev)}: ${e.message}`);
    continue;
  }
  const shown = Object.values(els).some((e) => e.textContent !== "" || e.className || e.style.width);
  if (!shown && logged.length === 0 && ctx.state.runId === undefined) {
    problems.push(`the ${kind} handler showed nothing`);
  }
}
for (const kind of Object.keys(HANDLERS)) {
  if (!events.$defs[kind]) problems.push(`handler for ${kind}, which the schema does not list`);
}

// one control per option; read back, every option comes back with its default
const html = optionsHtml(options);
for (const opt of options) {
  if (!html.includes(`data-option="${opt.name}"`)) problems.push(`no control for ${opt.name}`);
}
const defaults = readOptions(options, (name) => {
  const opt = options.find((o) => o.name === name);
  return opt.kind === "bool" ? opt.default : (opt.default ?? "");
});
for (const opt of options) {
  if (defaults[opt.name] !== opt.default) {
    problems.push(`${opt.name} reads back ${defaults[opt.name]}, not its default ${opt.default}`);
  }
}
const typed = readOptions(options, (name) => (name === "max_steps" ? " 12 " : ""));
if (typed.max_steps !== 12) problems.push(`max_steps typed as 12 reads back ${typed.max_steps}`);

console.log(JSON.stringify({ problems, kinds: Object.keys(events.$defs).length }));
