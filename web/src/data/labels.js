// What the page calls the data the record trains on: its target column (the unit of
// values and errors) and the spacing of its rows (weekly, daily…), from the engine
// (webapp/data_labels.py) for the record shown. app.labels holds them ({kind, file,
// own, target, datetime, frequency, window, horizon} or null); a "labels" event says
// they changed.
// The start strip's example picker names the pinned data beside the example's name.

// "week" for a weekly series; "row" when its rows are no calendar unit apart
export const stepUnit = (labels) => (labels && labels.frequency ? labels.frequency.unit : "row");
export const plural = (unit) => `${unit}s`;

// "load_mw, weekly" / "corpus.txt": what the picker says the example trains on
export function describe(labels) {
  if (!labels) return "";
  if (labels.kind !== "csv") return labels.file;
  return labels.frequency ? `${labels.target}, ${labels.frequency.name}` : labels.target;
}

// the metrics in the data's units (the engine's catalog says which: mae, rmse)
const IN_UNITS = new Set(["mae", "rmse"]);
export const metricUnit = (name, labels) =>
  (labels && labels.kind === "csv" && labels.target && IN_UNITS.has(name) ? labels.target : "");

function followPicker(app, labels) {
  const picker = document.getElementById("run-example");
  const opt = picker && [...picker.options].find((o) => o.value === app.recordName);
  for (const o of picker ? picker.options : []) if (o.dataset.base) o.textContent = o.dataset.base;
  if (!opt) return;
  opt.dataset.base = opt.dataset.base || opt.textContent;
  // the example's own file keeps the example's own words ("sunspots")
  if (labels && !labels.own) opt.textContent = opt.dataset.base.replace(/\s*\(.*\)$/, "") + ` (${describe(labels)})`;
}

export function watchLabels(client, app) {
  app.labels = null;
  let asked = 0;
  async function refresh(text) {
    const mine = ++asked;
    let got = null;
    try { got = await client.call("labels", { record: text }); } catch (e) { /* not parsed yet */ }
    if (mine !== asked) return; // a later record's answer wins
    app.labels = got;
    followPicker(app, got);
    app.emit("labels", got);
  }
  app.on("record", (text) => refresh(text));
  app.on("engine", () => refresh(app.record));
}
