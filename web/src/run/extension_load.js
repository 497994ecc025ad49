// Load extension…: the user's own catalog files (.py: blocks, optimizers, losses...),
// trusted because the user picked them, as `--extensions` trusts them on the command
// line (webapp/extension_api.py). Their entries then appear in Model View like
// built-ins; a record naming a file not loaded here is still refused. Nothing else in
// the tab loads code: an imported run or a shared link names files, never brings them.
const HTML = `
  <button id="run-load-extension" title="load your own catalog entries (.py files you trust)">Load extension…</button>
  <input id="run-extension-file" type="file" accept=".py,text/x-python" multiple hidden>
  <span id="run-extension-status" class="muted" role="status">your own optimizers, blocks or losses, as --extensions loads them</span>`;

export function mountExtensionLoader(root, { client, app, log }) {
  root.innerHTML = HTML;
  const $ = (id) => root.querySelector(`#${id}`);
  const status = $("run-extension-status");
  const say = (text, bad = false) => {
    status.textContent = text;
    status.title = text;
    status.classList.toggle("bad", bad);
    log(text);
  };
  $("run-load-extension").addEventListener("click", () => $("run-extension-file").click());
  $("run-extension-file").addEventListener("change", async (ev) => {
    const files = [...ev.target.files];
    ev.target.value = ""; // the same file picked again loads again (a no-op if unchanged)
    let loaded = 0;
    for (const f of files) {
      try {
        const r = await client.call("load_extension", { name: f.name, text: await f.text() });
        const ids = r.registered.map((e) => `${e.id} (${e.kind})`);
        say(`loaded ${r.name}: ${ids.length ? ids.join(", ") : "nothing new registered"}`);
        loaded += 1;
      } catch (e) {
        say(`could not load ${f.name}: ${e.message}`, true);
      }
    }
    root.dataset.loaded = String(Number(root.dataset.loaded || 0) + loaded);
    if (loaded) app.emit("catalog");
  });
}
