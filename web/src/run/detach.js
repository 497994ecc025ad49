// The detached run window: the live run moves to a window of its own (the same page,
// opened as `#detach=RUN`, showing only the run panel, with its own engine worker) so
// it can stay in view while the tab that started it goes to the background.
//
// One worker at a time owns the run store (the "scellis-store" lock, see worker.js), so
// the handover is a relay over a BroadcastChannel:
//   tab: Detach -> opens the window, keeps training while the window's engine boots
//   window: "ready"  -> tab: stops the run at its next step (checkpoint), writes the
//                       store back and lets it go (release_store), says "handoff"
//   window: takes the store (take_store), says "taken", resumes the run from that
//           checkpoint with the options it was started with, and relays its events
//   tab: shows the relayed events, asks for the store back (take_store waits until the
//        window lets it go: at the run's end, or when the window closes), then lists
//        the runs again
// The resumed run is the same run: same id, same store, same seed and Philox streams,
// so its per-step losses are those of an uninterrupted run.
import { showBanner, clearBanner } from "../banner.js";

const CHANNEL = "scellis-detach";

export function detachedRun() {
  const m = /^#detach=([\w-]+)$/.exec(location.hash);
  return m ? m[1] : null;
}

// in the tab that trains; ctx: {state, client, log, app, runs, setAway(on), onRemote(ev)}
export function createDetacher(ctx) {
  const { state, client, log, app } = ctx;
  const chan = new BroadcastChannel(CHANNEL);
  const job = { run: null, phase: null, win: null }; // phase: opening | handing | away
  state.detach = job;

  function done(why) {
    if (why) log(why);
    job.run = null;
    job.phase = null;
    job.win = null;
    clearBanner("detach");
    app.setStoreAway(false);
    ctx.setAway(false);
    ctx.runs.refresh();
  }

  async function handOver() {
    job.phase = "handing";
    if (!state.running) {
      // the run ended on its own while the window was starting: nothing left to move
      chan.postMessage({ type: "nothing", run: job.run });
      done(`run ${job.run} ended here before the detached window was ready`);
      return;
    }
    log(`the detached window is ready: handing run ${job.run} over at the next step`);
    client.control({ stop: true });
    await state.current.catch(() => {});
    await client.call("release_store");
    app.setStoreAway(true);
    job.phase = "away";
    ctx.setAway(true);
    ctx.runs.refresh();
    showBanner("info",
      `Run ${job.run} continues in its own window; this tab shows its progress and takes ` +
      "the run store back when that run ends or its window closes.",
      "detach", [["Show the window", () => job.win && job.win.focus()]]);
    chan.postMessage({ type: "handoff", run: job.run });
  }

  async function takeBack() {
    const run = job.run;
    try {
      await client.call("take_store"); // resolves once the window has let the store go
    } catch (e) {
      done(`could not take the run store back: ${e.message}`);
      return;
    }
    done("the run store is back in this tab");
    // the window closed (or crashed) mid-run: the store says so, and one click goes on
    const list = await ctx.runs.refresh();
    const row = (list || []).find((r) => r.id === run);
    if (row && row.status === "interrupted") {
      const at = row.checkpoint_step;
      log(`the detached window closed before run ${run} ended (step ${row.step})`);
      showBanner("warning",
        `The detached window closed before run ${run} ended; it is listed as interrupted` +
        (at != null ? ` and Resume continues it from its checkpoint at step ${at}.`
          : " (it has no checkpoint to resume from)."),
        "detach-closed",
        at != null ? [["Resume", () => {
          clearBanner("detach-closed");
          state.resume(run).catch(() => {});
        }]] : []);
    }
  }

  chan.onmessage = (ev) => {
    const m = ev.data || {};
    if (!job.run || m.run !== job.run) return;
    if (m.type === "ready" && job.phase === "opening") handOver();
    else if (m.type === "taken" && job.phase === "away") {
      log(`run ${job.run} continues in the detached window`);
      takeBack();
    } else if (m.type === "event" && job.phase === "away") ctx.onRemote(m.event);
  };

  function detach() {
    if (job.run) { if (job.win && !job.win.closed) job.win.focus(); return; }
    if (!state.running || !state.runId) {
      showBanner("warning", "Nothing to detach: start a recorded run first.", "detach");
      return;
    }
    const url = `${location.href.split("#")[0]}#detach=${state.runId}`;
    const win = window.open(url, `scellis-run-${state.runId}`, "popup,width=780,height=860");
    if (!win) {
      showBanner("warning", "The browser blocked the detached window (allow pop-ups).", "detach");
      return;
    }
    Object.assign(job, { run: state.runId, phase: "opening", win });
    // closed before it took the run: the run simply goes on here
    const watchWin = setInterval(() => {
      if (job.phase !== "opening") { clearInterval(watchWin); return; }
      if (win.closed) {
        clearInterval(watchWin);
        done("the detached window was closed before it took the run; the run goes on here");
      }
    }, 1000);
    log(`opened a detached window for run ${job.run}; training goes on here until it is ready`);
    showBanner("info",
      `Run ${job.run} moves to its own window: it goes on here until that window's engine ` +
      "has started, then continues there from a checkpoint (this tab shows its progress).",
      "detach", [["Show the window", () => win.focus()]]);
  }
  return { detach };
}

// in the detached window; ctx: {client, log, app, resume}
export function runDetached(run, ctx) {
  const { client, log, app } = ctx;
  document.body.classList.add("detached");
  document.title = `Scellis — run ${run}`;
  const chan = new BroadcastChannel(CHANNEL);
  const job = { run, phase: "booting" }; // booting | waiting | taking | running | ended
  app.run.detach = job;
  showBanner("info", `Detached window for run ${run}: starting the engine…`, "detach");
  // the plan box shows the run's own plan (its resume's plan event), never one of the
  // record this page loads: that is not necessarily the run's
  app.run.plan.stop();
  document.getElementById("run-plan").textContent =
    "memory plan: checked before the run's first step, in its tab";

  app.on("engine", (hello) => {
    if (hello && hello.persistent) {
      // the worker found the store free at boot: the tab is gone already
      job.phase = "waiting";
      log(`no tab holds the run store: continuing run ${run} from its last checkpoint`);
      takeOver();
      return;
    }
    job.phase = "waiting";
    showBanner("info", `Detached window for run ${run}: waiting for the tab to hand it over…`,
      "detach");
    chan.postMessage({ type: "ready", run });
    orphanCheck();
  });

  // the tab that opened this window may be gone (closed before the handover): when no
  // one holds the store, this window takes it and resumes the run from its checkpoint
  async function orphanCheck() {
    while (job.phase === "waiting") {
      await new Promise((res) => setTimeout(res, 3000));
      if (job.phase !== "waiting" || !navigator.locks) return;
      const { held } = await navigator.locks.query();
      if (!held.some((l) => l.name === "scellis-store")) {
        log(`no tab holds the run store: continuing run ${run} from its last checkpoint`);
        takeOver();
        return;
      }
    }
  }
  app.on("run-event", (ev) => { if (job.phase === "running") chan.postMessage({ type: "event", run, event: ev }); });

  chan.onmessage = async (ev) => {
    const m = ev.data || {};
    if (m.run !== run) return;
    if (m.type === "nothing") {
      job.phase = "ended";
      showBanner("info", `Run ${run} ended in its tab before this window was ready.`, "detach");
      return;
    }
    if (m.type === "handoff" && job.phase === "waiting") takeOver();
  };

  async function takeOver() {
    job.phase = "taking";
    await client.call("take_store");
    job.phase = "running";
    chan.postMessage({ type: "taken", run });
    showBanner("info", `Run ${run} runs in this window (detached from its tab).`, "detach");
    log(`took run ${run} over from its tab`);
    try {
      await ctx.resume(run);
    } catch (e) {
      // go() has shown the error
    } finally {
      // the tab takes the store back
      await client.call("release_store").catch((e) => log(`could not let the run store go: ${e.message}`));
      app.setStoreAway(true);
      app.run.runs.refresh();
      showBanner("info", `Run ${run} has ended; its tab has the run store again.`, "detach");
      job.phase = "ended"; // last: the window is done with the store
    }
  }
}
