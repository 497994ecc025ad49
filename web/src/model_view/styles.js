// Model View's and the data panel's styles, injected once as a <style> element (the page
// links only the shell's app.css, whatever bundler builds the site).
const CSS = `
.mv [hidden], .dp [hidden] { display: none !important; }
.mv { display: flex; flex-direction: column; gap: .5rem; }
.mv-bar { display: flex; align-items: center; gap: .6rem; }
/* the status pill and model id give way (ellipsised, whole on hover) so a long error
   never pushes the view tabs onto a second line */
.mv-bar > * { flex-shrink: 0; }
.mv-bar > .mv-status, .mv-bar > .mv-model-id { flex-shrink: 1; min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.mv-bar h2 { margin: 0; }
.mv-spacer { flex: 1; }
.mv-model-id { font: 12px ui-monospace, monospace; }
.mv-status { font-size: .8rem; padding: .1rem .5rem; border-radius: 999px; background: #f3f4f6; max-width: 46ch; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.mv-status-ok { background: #dcfce7; color: #166534; }
.mv-status-warn { background: #fef3c7; color: #92400e; }
.mv-status-bad { background: #fee2e2; color: #991b1b; }
.mv-latency { font-size: .75rem; }
.mv-latency:empty { display: none; }
.mv:not(.mv-full) .mv-latency { order: 10; flex-basis: 100%; }
.mv-tabs { display: inline-flex; border: 1px solid #d1d5db; border-radius: 6px; overflow: hidden; }
.mv-tabs button { border: 0; background: #fff; padding: .25rem .7rem; cursor: pointer; font: inherit; font-size: .85rem; }
.mv-tabs button[aria-selected="true"] { background: #1f2937; color: #fff; }
.mv-expand, .dp button, .mv-remove { font: inherit; font-size: .85rem; border: 1px solid #d1d5db; background: #fff; border-radius: 6px; padding: .25rem .6rem; cursor: pointer; }
.mv-expand:hover, .dp button:hover { background: #f3f4f6; }
.mv-panes { display: grid; grid-template-columns: 1fr; min-height: 0; }
.mv-pane { display: none; min-width: 0; min-height: 0; }
.mv-pane.active { display: flex; flex-direction: column; }
.mv-pane-title { display: none; font-size: .72rem; font-weight: 600; letter-spacing: .06em; text-transform: uppercase; color: #6b7280; padding: 0 0 .35rem; }
.mv-graph-canvas { overflow: auto; max-height: 520px; background: #f8fafc; border: 1px solid #e5e7eb; border-radius: 6px; }
.mv-svg { display: block; margin: 0 auto; }
.mv-node rect { fill: #fff; stroke: #94a3b8; stroke-width: 1.2; }
.mv-input rect { fill: #eff6ff; stroke: #60a5fa; }
.mv-output rect { stroke: #16a34a; stroke-width: 1.8; }
.mv-bad rect { stroke: #dc2626; stroke-width: 2; fill: #fef2f2; }
.mv-node.selected rect { stroke: #2563eb; stroke-width: 2.4; }
.mv-node { cursor: pointer; user-select: none; -webkit-user-select: none; }
.mv-node text { font: 12px system-ui, sans-serif; fill: #111827; pointer-events: none; }
.mv-node .mv-node-id { font-weight: 700; font-size: 13px; }
.mv-node .mv-node-kind { fill: #6b7280; font-size: 11px; }
.mv-node .mv-node-shape { fill: #1d4ed8; font: 11px ui-monospace, monospace; }
.mv-port { fill: #fff; stroke: #2563eb; stroke-width: 1.5; cursor: crosshair; }
.mv-port:hover { fill: #2563eb; }
.mv-edge { fill: none; stroke: #64748b; stroke-width: 1.5; }
.mv-arrowhead { fill: #64748b; }
.mv-drag { stroke: #2563eb; stroke-width: 2; stroke-dasharray: 5 4; }
.mv-rewire { display: flex; align-items: center; gap: .6rem; padding: .4rem .2rem; font-size: .85rem; }
.mv-rewire select, .mv-field input, .mv-field select, .dp select { font: inherit; font-size: .85rem; padding: .2rem .35rem; border: 1px solid #d1d5db; border-radius: 4px; background: #fff; }
.mv-rewire-label { font-weight: 600; }
.mv-form { overflow: auto; max-height: 560px; padding-right: .25rem; }
.mv-group-title { font-size: .72rem; text-transform: uppercase; letter-spacing: .06em; color: #6b7280; margin: .4rem 0; }
.mv-card { border: 1px solid #e5e7eb; border-radius: 6px; padding: .5rem .6rem; margin-bottom: .5rem; background: #fff; }
.mv-card-head { display: flex; align-items: center; gap: .5rem; }
.mv-card-title { font-weight: 700; }
.mv-block-name { font: inherit; font-weight: 700; border: 1px solid transparent; border-radius: 4px; padding: .05rem .25rem; width: 10ch; }
.mv-block-name:hover, .mv-block-name:focus { border-color: #d1d5db; }
.mv-block-id { font: 12px ui-monospace, monospace; color: #6b7280; flex: 1; }
.mv-remove { padding: 0 .4rem; color: #6b7280; }
.mv-doc { margin: .2rem 0 .3rem; color: #4b5563; font-size: .8rem; }
.mv-reads { font: 12px ui-monospace, monospace; color: #374151; margin-bottom: .2rem; }
.mv-fields { display: grid; grid-template-columns: minmax(7rem, 12rem) minmax(5.5rem, 9rem) minmax(7rem, 1fr); gap: .15rem .6rem; align-items: center; }
.mv-field { display: contents; }
.mv-field-label { display: flex; gap: .35rem; align-items: baseline; font-size: .85rem; min-width: 0; }
.mv-field-name { font-family: ui-monospace, monospace; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
.mv-type { flex: none; }
.mv-type { font-size: .68rem; color: #6b7280; background: #f3f4f6; border-radius: 3px; padding: 0 .25rem; }
.mv-field input, .mv-field select { width: 100%; }
.mv-field input:not(.mv-set) { color: #6b7280; font-style: italic; }
.mv-hint { font-size: .74rem; line-height: 1.25; color: #6b7280; display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; overflow: hidden; }
.mv-msg { grid-column: 1 / -1; color: #b91c1c; font-size: .78rem; }
.mv-msg:empty { display: none; }
.mv-field.invalid input, .mv-field.invalid select { border-color: #dc2626; background: #fef2f2; }
.mv-add { display: flex; gap: .4rem; align-items: center; flex-wrap: nowrap; padding: .4rem .6rem; border: 1px dashed #cbd5e1; border-radius: 6px; margin-bottom: .5rem; }
.mv-add input, .mv-add select { font: inherit; font-size: .85rem; padding: .2rem .35rem; border: 1px solid #d1d5db; border-radius: 4px; background: #fff; }
.mv-add .mv-add-name { width: 15ch; }
.mv-add .mv-add-kind { flex: 1; min-width: 10ch; }
.mv-add input.bad { border-color: #dc2626; background: #fef2f2; }
.mv-add-btn { font: inherit; font-size: .85rem; border: 1px solid #2563eb; color: #2563eb; background: #fff; border-radius: 6px; padding: .2rem .6rem; cursor: pointer; }
.mv-add-btn:hover { background: #eff6ff; }
.mv-code { border: 1px solid #e5e7eb; border-radius: 6px; height: 520px; overflow: hidden; }
.mv-code .cm-editor { height: 100%; }
.mv-problems { margin: 0; padding-left: 1.2rem; font-size: .82rem; color: #991b1b; max-height: 8rem; overflow: auto; }
.mv-problems:empty { display: none; }
.mv-problems a { color: inherit; text-decoration: none; }
.mv-problems a:hover { text-decoration: underline; }
.mv-fix { margin-left: .5rem; font-size: .78rem; padding: .05rem .45rem; border: 1px solid #2563eb; color: #1d4ed8; background: #eff6ff; border-radius: 4px; cursor: pointer; }
.mv-stale .mv-graph, .mv-stale .mv-form { opacity: .45; }
.mv.mv-full { position: fixed; inset: 0; z-index: 50; border-radius: 0; padding: .75rem 1rem; background: #fff; }
.mv.mv-full .mv-tabs { display: none; }
.mv.mv-full .mv-panes { grid-template-columns: minmax(300px, 1fr) minmax(360px, 1fr) minmax(360px, 1.1fr); gap: .9rem; flex: 1; }
.mv.mv-full .mv-pane { display: flex; flex-direction: column; }
.mv.mv-full .mv-pane-title { display: block; }
.mv.mv-full .mv-graph-canvas, .mv.mv-full .mv-form { max-height: calc(100vh - 9rem); }
.mv.mv-full .mv-code { height: calc(100vh - 9rem); }
/* full screen: a wide graph is scaled to the pane's width (no hidden columns to scroll to) */
.mv.mv-full .mv-graph-canvas svg { max-width: 100%; height: auto !important; }
body.mv-full-open { overflow: hidden; }
.mv-cm-error { text-decoration: underline wavy #dc2626; }
/* the data panel */
.dp { display: flex; flex-direction: column; gap: .6rem; }
.dp-drop { border: 2px dashed #cbd5e1; border-radius: 8px; padding: 1rem; text-align: center; color: #475569; background: #f8fafc; transition: background .15s, border-color .15s; }
.dp-drop.over { border-color: #2563eb; background: #eff6ff; }
.dp-drop label { color: #2563eb; cursor: pointer; text-decoration: underline; }
.dp-meta { font-size: .85rem; display: flex; gap: .8rem; flex-wrap: wrap; align-items: center; }
.dp-cols { display: flex; gap: 1rem; flex-wrap: wrap; align-items: center; font-size: .85rem; }
.dp-table { border-collapse: collapse; font: 12px ui-monospace, monospace; width: 100%; }
.dp-table th, .dp-table td { border-bottom: 1px solid #e5e7eb; padding: .15rem .4rem; text-align: right; }
.dp-table th { background: #f3f4f6; color: #374151; }
.dp-table th.dp-value { background: #dbeafe; }
.dp-table th.dp-time { background: #ede9fe; }
.dp-wrap { overflow-x: auto; max-height: 12rem; }
.dp-plot { width: 100%; height: 160px; display: block; background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; }
.dp-plot .dp-line { fill: none; stroke: #2563eb; stroke-width: 1.3; }
.dp-plot .dp-axis { stroke: #cbd5e1; }
.dp-plot text { font: 10px system-ui, sans-serif; fill: #6b7280; }
.dp-hash { font: 12px ui-monospace, monospace; background: #ecfdf5; color: #065f46; padding: .1rem .4rem; border-radius: 4px; }
.dp-error { color: #b91c1c; font-size: .85rem; }
.dp-error:empty { display: none; }
.dp-text { white-space: pre-wrap; font: 12px ui-monospace, monospace; background: #f3f4f6; padding: .5rem; border-radius: 6px; max-height: 10rem; overflow: auto; }
.dp button.primary { background: #2563eb; color: #fff; border-color: #2563eb; }
.dp button.primary:hover { background: #1d4ed8; }
`;

let done = false;
export function injectStyles() {
  if (done) return;
  done = true;
  const s = document.createElement("style");
  s.dataset.owner = "model-view";
  s.textContent = CSS;
  document.head.appendChild(s);
}
