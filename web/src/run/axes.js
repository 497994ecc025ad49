// Axis ticks for the forecast chart: round values on a number axis (1, 2 or 5 times a
// power of ten) and dates shown as finely as the series' own times differ.

// round values from at or below `lo` to at or above `hi`, about `count` steps apart
export function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(count, 1);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const out = [];
  const first = Math.floor(lo / step + 1e-9), last = Math.ceil(hi / step - 1e-9);
  for (let k = first; k <= last; k += 1) out.push(+(k * step).toPrecision(12));
  return out;
}

// a value as a tick reads best: no trailing zeros, thousands kept whole
export function tickText(v) {
  if (v === 0) return "0";
  if (Math.abs(v) >= 1000) return v.toFixed(0);
  return String(+v.toPrecision(4));
}

// "1994", "1994-03", "1994-03-05" or "1994-03-05 12:00": the coarsest unit in which the
// series' dates (ISO texts) still differ
export function dateFormatter(isoDates) {
  const parts = isoDates.map((d) => ({ month: d.slice(5, 7), day: d.slice(8, 10), time: d.slice(11, 16) }));
  const all = (key, value) => parts.every((p) => (p[key] || value) === value);
  if (all("time", "00:00") && all("day", "01") && all("month", "01")) return (d) => d.slice(0, 4);
  if (all("time", "00:00") && all("day", "01")) return (d) => d.slice(0, 7);
  if (all("time", "00:00")) return (d) => d.slice(0, 10);
  return (d) => `${d.slice(0, 10)} ${d.slice(11, 16)}`;
}

// about `count` indices spread over n points, first and last included
export function spreadIndices(n, count) {
  if (n <= 0) return [];
  if (n <= count) return [...Array(n).keys()];
  const out = new Set();
  for (let k = 0; k < count; k += 1) out.add(Math.round((k * (n - 1)) / (count - 1)));
  return [...out];
}
