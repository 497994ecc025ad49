// The memory plan, kept in step with the record: each change of the record marks the
// shown verdict as out of date at once, and a `plan` call a moment after the last
// change (typing sends many) replaces it. A reply for an older record is dropped.
// options(): the run options the plan depends on (replay, validate), as the run would
// take them.
const DEBOUNCE_MS = 600;

export function watchPlan({ client, app, state, box, show, options = () => ({}) }) {
  let timer = null, asked = 0, engineUp = false, stale = false, off = false;

  function pending(text) {
    box.className = "plan plan-none";
    box.dataset.verdict = "pending";
    box.textContent = text;
  }

  async function check() {
    timer = null;
    if (off) return;
    // the run's own plan event is shown while it trains: still current while the record
    // is the one training; else this one waits for the run's end
    if (state.running) { stale = app.record !== state.runRecord; return; }
    if (!engineUp || !app.record) { stale = true; return; }
    stale = false;
    const mine = ++asked;
    try {
      const ev = await client.call("plan", { record_text: app.record, ...options() });
      if (mine === asked) show(box, ev);
    } catch (e) {
      if (mine === asked) pending(`memory plan: not available until the record is valid (${e.message})`);
    }
  }

  function soon() {
    asked += 1; // whatever is on its way is about an older record now
    if (off) return;
    if (!state.running) pending("memory plan: checking the record…");
    clearTimeout(timer);
    timer = setTimeout(check, DEBOUNCE_MS);
  }

  app.on("record", soon);
  app.on("engine", () => { engineUp = true; soon(); });
  // off: a detached run's window, whose box keeps what it was given (the page's record
  // there is not the run's)
  const stop = () => { off = true; clearTimeout(timer); };
  // after a run: a record changed meanwhile, or one the run never planned (it failed
  // before its plan event) and the box still says it is checking, is planned now
  const recheck = () => { if (stale || box.dataset.verdict === "pending") soon(); };
  return { recheck, now: check, soon, stop };
}
