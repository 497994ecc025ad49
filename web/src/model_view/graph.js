// Model View's graph: the record's blocks laid out with dagre and drawn as SVG. Each node
// shows its name, block id and inferred output shape. Rewiring: drag from a node's output
// port (bottom dot) onto another block, or use the "in:" picker of the selected block.
// Double-clicking a node selects it and opens it (onOpen: Model View, full screen).
import { graphlib, layout } from "@dagrejs/dagre";

const NS = "http://www.w3.org/2000/svg";
const W = 180, H = 58;

function svg(tag, attrs = {}, parent = null) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

export function shapeText(s) {
  return Array.isArray(s) ? `[${s.join(", ")}]` : "shape ?";
}

export function createGraph(el, { onRewire, onSelect, onOpen }) {
  el.innerHTML = `
    <div class="mv-graph-canvas"><svg class="mv-svg" role="img" aria-label="block graph"></svg></div>
    <div class="mv-rewire" hidden>
      <span class="mv-rewire-label"></span>
      <label>in: <select class="mv-rewire-select" aria-label="rewire input"></select></label>
    </div>`;
  const root = el.querySelector("svg");
  const bar = el.querySelector(".mv-rewire");
  const select = bar.querySelector("select");
  let current = null, selected = null, problems = new Set();

  select.addEventListener("change", () => {
    if (selected && select.value) onRewire(selected, select.value);
  });

  function earlier(id) {
    // a block may read an input or any block above it (blocks run in document order)
    const ids = current.nodes.map((n) => n.id);
    return ids.slice(0, ids.indexOf(id));
  }

  function select_(id) {
    selected = id;
    for (const g of root.querySelectorAll(".mv-node")) g.classList.toggle("selected", g.dataset.id === id);
    const node = current && current.nodes.find((n) => n.id === id);
    if (!node || node.block_id === "input") { bar.hidden = true; onSelect && onSelect(id); return; }
    bar.hidden = false;
    bar.querySelector(".mv-rewire-label").textContent = `${id} (${node.block_id})`;
    const reads = current.edges.filter((e) => e.to === id).map((e) => e.from);
    select.innerHTML = "";
    for (const src of earlier(id)) {
      const o = document.createElement("option");
      o.value = src; o.textContent = src; o.selected = reads.length === 1 && reads[0] === src;
      select.appendChild(o);
    }
    onSelect && onSelect(id);
  }

  function dragFrom(srcId, startEvt) {
    const pt = root.createSVGPoint();
    const toLocal = (ev) => { pt.x = ev.clientX; pt.y = ev.clientY; return pt.matrixTransform(root.getScreenCTM().inverse()); };
    const p0 = toLocal(startEvt);
    const line = svg("line", { class: "mv-drag", x1: p0.x, y1: p0.y, x2: p0.x, y2: p0.y }, root);
    const move = (ev) => { const p = toLocal(ev); line.setAttribute("x2", p.x); line.setAttribute("y2", p.y); };
    const up = (ev) => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      line.remove();
      const hit = document.elementFromPoint(ev.clientX, ev.clientY);
      const g = hit && hit.closest && hit.closest(".mv-node");
      const target = g && g.dataset.id;
      if (target && target !== srcId && g.dataset.kind !== "input") onRewire(target, srcId);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  }

  // laidOut: the nodes and edges drawn; exact: drawn where dagre put them (a rewire from
  // the UI thread first moves only the edges, and dagre lays the graph out a frame later)
  let laidOut = "", laidNodes = "", exact = true, settling = false;
  const centres = new Map();

  function patch(graph) {
    // same nodes and edges as drawn: update shapes and marks, keep the layout
    const outs = new Set(graph.outputs || []);
    for (const n of graph.nodes) {
      const grp = root.querySelector(`.mv-node[data-id="${CSS.escape(n.id)}"]`);
      grp.querySelector(".mv-node-shape").textContent = shapeText(n.out_shape);
      grp.classList.toggle("mv-bad", problems.has(n.id));
      grp.classList.toggle("mv-output", outs.has(n.id));
    }
  }

  function redrawEdges(graph) {
    // the new wiring between the nodes where they are: straight, port to top
    for (const e of root.querySelectorAll(".mv-edge")) e.remove();
    const first = root.querySelector(".mv-node");
    for (const e of graph.edges) {
      const a = centres.get(e.from), b = centres.get(e.to);
      if (!a || !b) continue;
      const d = `M${a.x.toFixed(1)},${(a.y + H / 2).toFixed(1)} L${b.x.toFixed(1)},${(b.y - H / 2).toFixed(1)}`;
      const path = svg("path", { d, class: "mv-edge", "data-from": e.from, "data-to": e.to, "marker-end": "url(#mv-arrow)" });
      root.insertBefore(path, first);
    }
  }

  function settle() {
    settling = false;
    if (!exact && current) layoutAll(current);
  }

  function render(graph, diagnostics = [], { quick = false } = {}) {
    current = graph;
    problems = new Set(diagnostics.map((d) => d.block).filter(Boolean));
    const nodesKey = JSON.stringify(graph.nodes.map((n) => [n.id, n.block_id]));
    const key = JSON.stringify([nodesKey, graph.edges]);
    if (key === laidOut && (exact || quick)) { patch(graph); return; }
    if (quick && nodesKey === laidNodes) {
      laidOut = key;
      exact = false;
      redrawEdges(graph);
      patch(graph);
      if (selected) select_(selected);
      if (!settling) { settling = true; requestAnimationFrame(() => setTimeout(settle, 0)); }
      return;
    }
    laidOut = key;
    layoutAll(graph);
  }

  function layoutAll(graph) {
    laidNodes = JSON.stringify(graph.nodes.map((n) => [n.id, n.block_id]));
    exact = true;
    centres.clear();
    const g = new graphlib.Graph();
    g.setGraph({ rankdir: "TB", nodesep: 28, ranksep: 44, marginx: 16, marginy: 16 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const n of graph.nodes) g.setNode(n.id, { width: W, height: H });
    for (const e of graph.edges) if (g.hasNode(e.from)) g.setEdge(e.from, e.to);
    layout(g);
    const { width, height } = g.graph();
    // drawn at 1:1 (readable text); a graph wider than the pane scrolls
    const w = Math.max(width, W + 32), h = Math.max(height, H + 32);
    root.setAttribute("viewBox", `0 0 ${w} ${h}`);
    root.style.width = `${w}px`;
    root.style.height = `${h}px`;
    root.innerHTML = "";
    const defs = svg("defs", {}, root);
    const m = svg("marker", { id: "mv-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
    svg("path", { d: "M0,0 L10,5 L0,10 z", class: "mv-arrowhead" }, m);
    for (const e of g.edges()) {
      const pts = g.edge(e).points;
      const d = pts.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
      svg("path", { d, class: "mv-edge", "data-from": e.v, "data-to": e.w, "marker-end": "url(#mv-arrow)" }, root);
    }
    const outs = new Set(graph.outputs || []);
    for (const n of graph.nodes) {
      const p = g.node(n.id);
      centres.set(n.id, { x: p.x, y: p.y });
      const kind = n.block_id === "input" ? "input" : "block";
      const cls = ["mv-node", `mv-${kind}`, outs.has(n.id) ? "mv-output" : "", problems.has(n.id) ? "mv-bad" : "", n.id === selected ? "selected" : ""].join(" ");
      const grp = svg("g", { class: cls, "data-id": n.id, "data-kind": kind, transform: `translate(${p.x - W / 2},${p.y - H / 2})`, tabindex: 0 }, root);
      svg("rect", { width: W, height: H, rx: 7 }, grp);
      svg("text", { x: 10, y: 19, class: "mv-node-id" }, grp).textContent = n.id;
      svg("text", { x: 10, y: 35, class: "mv-node-kind" }, grp).textContent = kind === "input" ? "input" : n.block_id || "(no block_id)";
      svg("text", { x: 10, y: 50, class: "mv-node-shape" }, grp).textContent = shapeText(n.out_shape);
      const port = svg("circle", { cx: W / 2, cy: H, r: 5, class: "mv-port", "data-port": n.id }, grp);
      port.addEventListener("pointerdown", (ev) => { ev.preventDefault(); ev.stopPropagation(); dragFrom(n.id, ev); });
      grp.addEventListener("click", () => select_(n.id));
      // a second press would select the text under it: the double click opens instead
      grp.addEventListener("mousedown", (ev) => { if (ev.detail > 1) ev.preventDefault(); });
      grp.addEventListener("dblclick", (ev) => {
        ev.preventDefault();
        window.getSelection()?.removeAllRanges();
        select_(n.id);
        if (onOpen) onOpen(n.id);
      });
    }
    if (selected && graph.nodes.some((n) => n.id === selected)) select_(selected);
    else bar.hidden = true;
  }

  return { render, select: select_, get selected() { return selected; } };
}
