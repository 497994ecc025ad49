// The forecast chart of a trained series model: the validation range's actual values
// and one-step-ahead predictions, then the forecast past the series' end, on axes in
// the data's own units (y: the target column) against its dates (x: the datetime
// column, else the row number). Points come from the engine (use_api.predict's plot);
// this only draws them, at the width of its box, again when the box is resized.
import { dateFormatter, niceTicks, spreadIndices, tickText } from "./axes.js";

const NS = "http://www.w3.org/2000/svg";
const H = 280, M = { l: 60, r: 14, t: 30, b: 46 };
export const SERIES = {
  actual: { color: "#111827", dash: "" },
  predicted: { color: "#d97706", dash: "5 3" },
  forecast: { color: "#2563eb", dash: "" },
};

// x of a date: ISO text -> milliseconds (UTC when it names no zone; a date alone is
// read as UTC by the standard already), a row number as is
function xOf(d) {
  if (typeof d === "number") return d;
  const zoned = /(Z|[+-]\d\d:\d\d)$/.test(d) || /^\d{4}-\d\d-\d\d$/.test(d);
  return Date.parse(zoned ? d : `${d}Z`);
}

function el(parent, tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}

const lowest = (vs) => vs.reduce((a, b) => (b < a ? b : a), Infinity);
const highest = (vs) => vs.reduce((a, b) => (b > a ? b : a), -Infinity);

// the chart's scales: x from the dates, y from ticks that cover every value
function frame(plot, W) {
  const dates = [...plot.past.map((p) => p[0]), ...plot.future.map((p) => p[0])];
  const values = [...plot.past.flatMap((p) => [p[1], p[2]]), ...plot.future.map((p) => p[1])];
  const xs = dates.map(xOf);
  const x0 = lowest(xs), x1 = highest(xs);
  const yTicks = niceTicks(lowest(values), highest(values), 5);
  const y0 = yTicks[0], y1 = yTicks[yTicks.length - 1];
  const pw = W - M.l - M.r, ph = H - M.t - M.b;
  return {
    W, pw, ph, dates, xs, x0, x1, yTicks,
    sx: (x) => M.l + (pw * (x - x0)) / (x1 - x0 || 1),
    sy: (y) => M.t + ph - (ph * (y - y0)) / (y1 - y0 || 1),
  };
}

function yAxis(g, f, label) {
  for (const v of f.yTicks) {
    el(g, "line", { x1: M.l, x2: f.W - M.r, y1: f.sy(v), y2: f.sy(v), stroke: "#e5e7eb" });
    el(g, "text", { x: M.l - 6, y: f.sy(v) + 4, "text-anchor": "end", class: "fc-ytick" }, tickText(v));
  }
  el(g, "line", { x1: M.l, x2: M.l, y1: M.t, y2: M.t + f.ph, stroke: "#6b7280" });
  el(g, "text", { class: "fc-ylabel", transform: `translate(14 ${M.t + f.ph / 2}) rotate(-90)`,
    "text-anchor": "middle", "font-weight": 600 }, label);
}

// as many dates as fit (the first and last included), or round row numbers
function xTicksOf(f) {
  if (typeof f.dates[0] === "string") {
    const fmt = dateFormatter(f.dates);
    // room for each label's width (about 7 px a character at 11 px) and a gap: an end
    // label is anchored at its end, so neighbours need the whole width apart
    const room = 7 * fmt(f.dates[0]).length + 24;
    return spreadIndices(f.dates.length, Math.max(2, Math.floor(f.pw / room)))
      .map((i) => [f.xs[i], fmt(f.dates[i])]);
  }
  return niceTicks(f.x0, f.x1, Math.max(2, Math.floor(f.pw / 70)))
    .filter((v) => v >= f.x0 && v <= f.x1).map((v) => [v, tickText(v)]);
}

function xAxis(g, f, label) {
  const base = M.t + f.ph;
  el(g, "line", { x1: M.l, x2: f.W - M.r, y1: base, y2: base, stroke: "#6b7280" });
  const ticks = xTicksOf(f);
  ticks.forEach(([x, text], k) => {
    el(g, "line", { x1: f.sx(x), x2: f.sx(x), y1: base, y2: base + 4, stroke: "#6b7280" });
    const anchor = k === 0 ? "start" : k === ticks.length - 1 ? "end" : "middle";
    el(g, "text", { x: f.sx(x), y: base + 16, "text-anchor": anchor, class: "fc-xtick" }, text);
  });
  el(g, "text", { class: "fc-xlabel", x: M.l + f.pw / 2, y: H - 6, "text-anchor": "middle",
    "font-weight": 600 }, label);
}

// the stretch past the series' end, shaded behind the grid
function forecastBand(svg, f, plot) {
  if (!plot.future.length || !plot.past.length) return;
  const end = f.sx(xOf(plot.past[plot.past.length - 1][0]));
  el(svg, "rect", { x: end, y: M.t, width: Math.max(0, f.W - M.r - end), height: f.ph, fill: "#eff6ff" });
  el(svg, "line", { x1: end, x2: end, y1: M.t, y2: M.t + f.ph, stroke: "#93c5fd", "stroke-dasharray": "3 3" });
}

function lines(svg, f, plot) {
  const line = (pts, name) => {
    const s = SERIES[name];
    const d = pts.map(([x, y], i) => `${i ? "L" : "M"}${f.sx(x).toFixed(1)},${f.sy(y).toFixed(1)}`).join("");
    el(svg, "path", { d, fill: "none", stroke: s.color, "stroke-width": 2, "stroke-dasharray": s.dash, class: `fc-${name}` });
  };
  line(plot.past.map((p) => [xOf(p[0]), p[1]]), "actual");
  line(plot.past.map((p) => [xOf(p[0]), p[2]]), "predicted");
  if (!plot.future.length) return;
  // the forecast continues the model's own last one-step prediction
  const last = plot.past[plot.past.length - 1];
  const head = last ? [[xOf(last[0]), last[2]]] : [];
  line([...head, ...plot.future.map((p) => [xOf(p[0]), p[1]])], "forecast");
  for (const [d, v] of plot.future) {
    el(svg, "circle", { cx: f.sx(xOf(d)), cy: f.sy(v), r: 2.5, fill: SERIES.forecast.color, class: "fc-point" });
  }
}

function draw(svg, plot, labels, width) {
  const W = Math.max(280, Math.floor(width));
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.innerHTML = "";
  if (!plot.past.length && !plot.future.length) return;
  const f = frame(plot, W);
  forecastBand(svg, f, plot);
  const g = el(svg, "g", { class: "fc-axes", "font-size": 11, fill: "#374151" });
  yAxis(g, f, labels.y);
  xAxis(g, f, labels.x);
  lines(svg, f, plot);
  legend(svg, plot);
}

// the series drawn, named (a chart of the validation range alone has no forecast)
function legend(svg, plot) {
  const g = el(svg, "g", { class: "fc-legend", "font-size": 12, fill: "#111827" });
  let x = M.l;
  for (const [name, s] of Object.entries(SERIES)) {
    if (name === "forecast" && !plot.future.length) continue;
    el(g, "line", { x1: x, x2: x + 22, y1: 14, y2: 14, stroke: s.color, "stroke-width": 2.5, "stroke-dasharray": s.dash });
    el(g, "text", { x: x + 27, y: 18 }, name);
    x += 27 + 8 * name.length + 18;
  }
}

// draws `plot` into `box` (a div) with axis labels {x, y}; redraws when the box resizes
export function renderForecast(box, plot, labels) {
  box.innerHTML = "";
  const svg = document.createElementNS(NS, "svg");
  svg.classList.add("forecast-plot");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${labels.y} against ${labels.x}: actual, predicted, ` +
    `and ${plot.future.length} forecast steps`);
  svg.dataset.forecastPoints = String(plot.future.length);
  box.appendChild(svg);
  const redraw = () => draw(svg, plot, labels, box.clientWidth || 600);
  redraw();
  if (box._resize) box._resize.disconnect();
  if (window.ResizeObserver) {
    let last = box.clientWidth;
    box._resize = new ResizeObserver(() => {
      if (box.clientWidth !== last) { last = box.clientWidth; redraw(); }
    });
    box._resize.observe(box);
  }
  return svg;
}
