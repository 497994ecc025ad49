// The data panel's preview plot: one series as an SVG polyline with min/max labels.
const NS = "http://www.w3.org/2000/svg";

export function drawSeries(svgEl, series, label, ends = null) {
  const W = 600, H = 160, L = 44, R = 8, T = 10, B = 20;
  svgEl.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svgEl.setAttribute("preserveAspectRatio", "none");
  svgEl.innerHTML = "";
  // a missing cell crosses from Python as undefined, not null: keep finite numbers only,
  // or one gap turns the whole line into NaN
  const pts = series.x.map((x, i) => [x, series.y[i]])
    .filter(([, y]) => typeof y === "number" && Number.isFinite(y));
  if (!pts.length) return;
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1;
  const y0 = Math.min(...ys), y1 = Math.max(...ys);
  const sx = (x) => L + ((x - x0) / (x1 - x0 || 1)) * (W - L - R);
  const sy = (y) => H - B - ((y - y0) / (y1 - y0 || 1)) * (H - T - B);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svgEl.appendChild(e);
    return e;
  };
  add("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "dp-axis" });
  add("line", { x1: L, y1: T, x2: L, y2: H - B, class: "dp-axis" });
  const fmt = (v) => (Math.abs(v) >= 1000 || Number.isInteger(v) ? v.toFixed(0) : v.toPrecision(3));
  add("text", { x: L - 4, y: T + 8, "text-anchor": "end" }, fmt(y1));
  add("text", { x: L - 4, y: H - B, "text-anchor": "end" }, fmt(y0));
  // the x axis: the datetime column's first and last values when one is chosen
  add("text", { x: L, y: H - 5 }, ends ? ends[0] : "row " + x0);
  add("text", { x: W - R, y: H - 5, "text-anchor": "end" }, ends ? ends[1] : "row " + x1);
  if (label) add("text", { x: L + 6, y: T + 8 }, label);
  const d = pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
  add("polyline", { points: d, class: "dp-line", "vector-effect": "non-scaling-stroke" });
  svgEl.dataset.points = String(pts.length);
}
