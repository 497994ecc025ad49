// Placeholder Model View (owned by the webui branch, which replaces this file): a plain
// text area over app.record so the run panel has something to train.
export function mount(el, client, app) {
  el.innerHTML = '<h2>Model</h2><textarea id="record-text" spellcheck="false"></textarea>';
  const ta = el.querySelector("textarea");
  ta.value = app.record;
  ta.addEventListener("input", () => { app.record = ta.value; app.emit("record", app.record); });
  app.on("record", (text) => { if (ta.value !== text) ta.value = text; });
}
