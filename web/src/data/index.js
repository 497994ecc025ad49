// Placeholder data panel (owned by the webui branch, which replaces this file). Without
// a picked dataset the run trains on the record's own data section.
export function mount(el, client, app) {
  el.innerHTML = "<h2>Data</h2><p class=\"muted\">The record's own data section is used.</p>";
}
