// The page's entry point: start the worker, make the shared app state, mount the panels.
import * as client from "./worker_client.js";
import { createApp } from "./app_state.js";
import * as runPanel from "./run/index.js";
import * as modelView from "./model_view/index.js";
import * as dataPanel from "./data/index.js";
import * as importer from "./import/index.js";
import { clearBanner, showBanner } from "./banner.js";
import { watchLabels } from "./data/labels.js";
import "./app.css";

const app = createApp();
window.scellisApp = app; // tests and the console read the state from here
window.scellisClient = client;

function registerServiceWorker() {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.register("sw.js").catch((e) => console.warn("service worker", e));
}

async function start() {
  // the engine's worker starts first: its start-up (seconds) runs while the panels mount
  const engine = client.ready();
  registerServiceWorker();
  const status = document.getElementById("engine-status");
  client.onStatus((text) => { status.textContent = text; });
  watchLabels(client, app);
  modelView.mount(document.getElementById("model-view"), client, app);
  dataPanel.mount(document.getElementById("data-panel"), client, app);
  runPanel.mount(document.getElementById("run-panel"), client, app);
  const importSlot = document.createElement("span");
  document.getElementById("start-import").appendChild(importSlot);
  importer.mount(importSlot, client, app, [document.getElementById("model-view")]);
  try {
    const hello = await engine;
    status.textContent = `engine ready: ${hello.device}`;
    document.body.dataset.engine = "ready";
    // files an earlier tab kept in memory only (too large for browser storage), gone now
    if (hello.storage_notes && hello.storage_notes.length) {
      showBanner("warning", hello.storage_notes.join(" · "), "storage", [["dismiss", () => clearBanner("storage")]]);
    }
    app.emit("engine", hello);
  } catch (e) {
    document.body.dataset.engine = "failed";
    status.textContent = "engine failed to start";
    showBanner("error", e.message || String(e), "engine");
    app.emit("engine-failed", e);
  }
}

start();
