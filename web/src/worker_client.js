// The page's side of the engine worker: call(cmd, args) -> Promise<result>,
// stream(cmd, args, onEvent) -> Promise<result> (one onEvent per yielded item),
// control(msg) (pause/stop, delivered at once), ready() -> Promise<hello>.
let worker = null;
let nextId = 1;
const pending = new Map(); // id -> {resolve, reject, onEvent}
let readyPromise = null;
const statusListeners = new Set();

export class EngineError extends Error {
  constructor(err) {
    super(err.message || "engine error");
    this.diagnostics = err.diagnostics || [];
    this.type = err.type;
  }
}

// the worker's start-up marks (absolute times) as ms since this page's navigation start,
// beside the page's own: when its script ran and when it made the worker
const pageMarks = [];
function pageMark(name) {
  performance.mark(name);
  pageMarks.push([name, performance.timeOrigin + performance.now()]);
}

function withPageTimes(hello) {
  const all = [...pageMarks, ...(hello.boot_marks || [])];
  hello.boot_marks = Object.fromEntries(all.map(([k, t]) => [k, t - performance.timeOrigin]));
  return hello;
}

function start() {
  if (worker) return;
  const early = window.scellisEngine; // the worker index.html started, if it did
  if (early) pageMarks.push(["page:worker-created", early.createdAt]);
  else pageMark("page:worker-created");
  worker = early ? early.worker : new Worker(new URL("./worker.js", document.baseURI), { type: "module" });
  let resolveReady, rejectReady;
  readyPromise = new Promise((res, rej) => { resolveReady = res; rejectReady = rej; });
  worker.onerror = (e) => rejectReady(new Error(`the engine worker failed: ${e.message}`));
  worker.onmessage = (ev) => receive(ev.data);
  pageMark("page:client-attached");
  if (early) for (const m of early.early.splice(0)) receive(m);

  function receive(m) {
    if (m.status !== undefined) { for (const fn of statusListeners) fn(m.status); return; }
    if (m.ready) { resolveReady(withPageTimes(m.ready)); return; }
    if (m.fatal) { rejectReady(Object.assign(new Error(m.fatal.message), m.fatal)); return; }
    const p = pending.get(m.id);
    if (!p) return;
    if (m.event !== undefined) { if (p.onEvent) p.onEvent(m.event); return; }
    pending.delete(m.id);
    if (m.error) p.reject(new EngineError(m.error));
    else p.resolve(m.result);
  }
}

export function ready() { start(); return readyPromise; }

export function onStatus(fn) { statusListeners.add(fn); }

export function stream(cmd, args = {}, onEvent = null) {
  start();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onEvent });
    worker.postMessage({ id, cmd, args });
  });
}

export function call(cmd, args = {}) { return stream(cmd, args, null); }

export function control(msg) { start(); worker.postMessage({ control: msg }); }
