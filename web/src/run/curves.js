// Live curves with uPlot: training loss and validation loss on one chart (log scale),
// the learning rate on a second. Points arrive by step; validation points are sparse,
// so both series share one step axis and gaps are bridged.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

// steps are whole numbers: ticks at 1, 2, 5, 10, 20, 50... never at 1.5
export const STEP_INCRS = [1, 2, 5].flatMap((m) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6].map((p) => m * p))
  .sort((a, b) => a - b);
// a rate like 7.5e-4 needs more than the fixed decimals uPlot picks (0.001 twice)
const expTicks = (u, splits) => splits.map((v) => (v === 0 ? "0" : v.toExponential(1)));

// as wide as the panel gives (a phone's too), never wider than reads well
export const widthOf = (el) => Math.max(200, Math.min(el.clientWidth || 640, 900));

function chart(el, title, series, log) {
  const opts = {
    title,
    width: widthOf(el),
    height: 200,
    scales: { x: { time: false }, y: log ? { distr: 3 } : {} },
    series: [{ label: "step" }, ...series.map((s) => ({ spanGaps: true, width: 2, ...s }))],
    axes: [{ incrs: STEP_INCRS }, log ? { size: 60 } : { size: 60, values: expTicks }],
  };
  return new uPlot(opts, [[], ...series.map(() => [])], el);
}

export function createCurves(root) {
  // before the first point the charts are empty frames: a line says what will be there
  root.innerHTML = '<p class="curves-empty muted">The loss and learning-rate curves draw here ' +
    "as the run trains.</p>" +
    '<div class="curve" id="curve-loss"></div><div class="curve" id="curve-lr"></div>';
  const lossEl = root.querySelector("#curve-loss");
  const lrEl = root.querySelector("#curve-lr");
  let steps, cols, lossPlot, lrPlot;
  const names = ["loss", "val_loss", "lr"];

  function reset() {
    if (lossPlot) lossPlot.destroy();
    if (lrPlot) lrPlot.destroy();
    steps = [];
    cols = { loss: [], val_loss: [], lr: [] };
    root.classList.add("curves-none");
    lossPlot = chart(lossEl, "loss", [
      { label: "train", stroke: "#2563eb" },
      { label: "validation", stroke: "#dc2626", points: { show: true } },
    ], true);
    lrPlot = chart(lrEl, "learning rate", [{ label: "lr", stroke: "#059669" }], false);
  }

  // a step's place on the axis: points do not arrive in step order (a resumed run's
  // history comes curve by curve, the loss curve's steps first, then the validation's,
  // whose steps the loss curve may not have), and uPlot draws in array order
  function slot(step) {
    let lo = 0, hi = steps.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (steps[mid] < step) lo = mid + 1; else hi = mid;
    }
    if (steps[lo] !== step) {
      steps.splice(lo, 0, step);
      for (const n of names) cols[n].splice(lo, 0, null);
    }
    return lo;
  }

  function add(name, step, value) {
    if (value == null || !isFinite(value)) return;
    cols[name][slot(step)] = value;
    root.classList.remove("curves-none");
    lossPlot.setData([steps, cols.loss, cols.val_loss]);
    lrPlot.setData([steps, cols.lr]);
  }

  // what is drawn, for tests and export: the plotted series as {steps, loss, val_loss, lr}
  function data() {
    return { steps: [...steps], loss: [...cols.loss], val_loss: [...cols.val_loss], lr: [...cols.lr] };
  }

  reset();
  // uPlot draws at a fixed size: follow the panel as the window (or layout) changes
  let last = 0;
  new ResizeObserver(() => {
    const w = widthOf(lossEl);
    if (w === last) return;
    last = w;
    for (const p of [lossPlot, lrPlot]) p.setSize({ width: w, height: 200 });
  }).observe(root);
  const api = { add, reset, data, plots: () => [lossPlot, lrPlot] };
  root.curves = api;
  return api;
}
