// The long run, honestly: a hidden tab is throttled by the browser, so say so loudly
// (banner + run-log entry); offer a screen wake lock only on the user's click, and a
// detached run window (detach.js) that can stay visible while this tab is in the
// background. ``detach`` is null in the detached window itself.
import { showBanner, clearBanner } from "../banner.js";

export function watchVisibility(state, wakeButton, detach, log) {
  document.addEventListener("visibilitychange", () => {
    if (!state.running) return;
    if (document.visibilityState === "hidden") {
      showBanner("warning",
        "This tab is hidden: the browser throttles background tabs, so training will slow " +
        "down (and may stop if the tab is discarded). " +
        (detach ? "Keep it visible, or detach the run into its own window." : "Keep it visible."),
        "hidden", detach ? [["Detach the run", () => detach()]] : []);
      log("tab hidden: training will slow down while it stays in the background");
    } else {
      clearBanner("hidden");
      log("tab visible again");
    }
  });

  let lock = null;
  wakeButton.addEventListener("click", async () => {
    if (lock) { await lock.release(); lock = null; wakeButton.textContent = "Keep screen on"; return; }
    if (!("wakeLock" in navigator)) {
      showBanner("warning", "This browser has no screen wake lock (navigator.wakeLock).", "wakelock");
      return;
    }
    const ok = window.confirm("Keep the screen on while this page is open? (Click Keep screen on again to stop.)");
    if (!ok) return;
    try {
      lock = await navigator.wakeLock.request("screen");
      wakeButton.textContent = "Let screen sleep";
      log("screen wake lock on (asked by the user)");
      lock.addEventListener("release", () => { lock = null; wakeButton.textContent = "Keep screen on"; });
    } catch (e) {
      showBanner("warning", `The screen wake lock was refused: ${e.message}`, "wakelock");
    }
  });

  return { clear: () => clearBanner("hidden") };
}
