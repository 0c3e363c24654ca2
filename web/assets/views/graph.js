// Contract graph drawn as SVG with a layered layout: a node's column is its
// longest distance from an entry point over forward edges, so every forward
// transition points right and is drawn solid; only edges that close a cycle
// (retries, loops) are dashed. The picture sits in a viewport with pan
// (drag) and zoom (buttons, Ctrl+wheel) that never shrinks text below a
// readable size; large graphs are panned, not squeezed.
const NS = 'http://www.w3.org/2000/svg';
const W = 168, H = 50, GX = 64, GY = 24, PAD = 24;
const FONT = 10.5, MIN_FONT = 10; // px: the graph's smallest text (edge labels) and the least the zoom draws it at

function el(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export function layoutGraph(graph, transitions) {
  const nodes = (graph && graph.nodes) || [];
  const ids = nodes.map((n) => n.id);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const edges = [];
  const seen = new Map();
  const addEdge = (from, to, label, retry) => {
    if (!byId.has(from) || !byId.has(to)) return;
    const k = from + '\u0000' + to;
    const e = seen.get(k);
    if (e) { if (label && !e.label) e.label = label; return; }
    const ne = { from, to, label, retry: !!retry };
    seen.set(k, ne);
    edges.push(ne);
  };
  for (const n of nodes) for (const t of n.next || []) addEdge(n.id, t);
  for (const tr of transitions || []) {
    for (const t of tr.to || []) addEdge(tr.from, t);
    if (tr.maxRetries) addEdge(tr.from, tr.from, `retry ≤${tr.maxRetries}`, true);
  }
  const out = new Map(ids.map((id) => [id, []]));
  for (const e of edges) out.get(e.from).push(e);
  const incoming = new Map(ids.map((id) => [id, 0]));
  for (const e of edges) if (e.from !== e.to) incoming.set(e.to, incoming.get(e.to) + 1);
  let starts = ((graph && graph.entryPoints) || []).filter((id) => byId.has(id));
  if (!starts.length) starts = ids.filter((id) => incoming.get(id) === 0);
  if (!starts.length && ids.length) starts = [ids[0]];

  // Back edges: those reaching a node still on the DFS stack (they close a cycle).
  const state = new Map();
  const dfs = (id) => {
    state.set(id, 1);
    for (const e of out.get(id)) {
      const s = state.get(e.to);
      if (s === 1) e.back = true;
      else if (!s) dfs(e.to);
    }
    state.set(id, 2);
  };
  for (const s of starts) if (!state.get(s)) dfs(s);
  for (const id of ids) if (!state.get(id)) dfs(id);

  // Longest-path layers over forward edges (a DAG once back edges are out).
  const layer = new Map(starts.map((s) => [s, 0]));
  const order = [];
  const mark = new Set();
  const topo = (id) => { if (mark.has(id)) return; mark.add(id); for (const e of out.get(id)) if (!e.back) topo(e.to); order.unshift(id); };
  for (const s of starts) topo(s);
  for (const id of ids) topo(id);
  for (const id of order) {
    if (!layer.has(id)) layer.set(id, 0);
    for (const e of out.get(id)) if (!e.back) layer.set(e.to, Math.max(layer.get(e.to) || 0, layer.get(id) + 1));
  }
  const cols = [];
  for (const id of ids) { const l = layer.get(id); (cols[l] = cols[l] || []).push(id); }
  const pos = new Map();
  const maxRows = Math.max(1, ...cols.filter(Boolean).map((c) => c.length));
  const height = PAD * 2 + maxRows * H + (maxRows - 1) * GY + 40;
  cols.forEach((col, ci) => {
    if (!col) return;
    const colH = col.length * H + (col.length - 1) * GY;
    const y0 = PAD + ((maxRows * H + (maxRows - 1) * GY) - colH) / 2;
    col.forEach((id, ri) => pos.set(id, { x: PAD + ci * (W + GX), y: y0 + ri * (H + GY) }));
  });
  const width = PAD * 2 + Math.max(1, cols.length) * W + Math.max(0, cols.length - 1) * GX;
  return { nodes, edges, pos, layer, width, height, terminals: new Set((graph && graph.terminalSteps) || []), entries: new Set(starts) };
}

function edgePath(L, e) {
  const a = L.pos.get(e.from), b = L.pos.get(e.to);
  if (e.from === e.to) {
    const x = a.x + W / 2, y = a.y + H;
    return { d: `M${x - 20},${y} C${x - 30},${y + 34} ${x + 30},${y + 34} ${x + 20},${y + 2}`, lx: x, ly: y + 36 };
  }
  if (!e.back && b.x > a.x) {
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
    return { d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 2},${y2}`, lx: mx, ly: (y1 + y2) / 2 - 6 };
  }
  const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y + H;
  const dip = Math.max(y1, y2) + 30;
  return { d: `M${x1},${y1} C${x1},${dip} ${x2},${dip} ${x2},${y2 + 2}`, lx: (x1 + x2) / 2, ly: dip - 2 };
}

function arcAbove(L, e) {
  const a = L.pos.get(e.from), b = L.pos.get(e.to);
  const x1 = a.x + W / 2, y1 = a.y, x2 = b.x + W / 2, y2 = b.y;
  const top = Math.max(4, Math.min(y1, y2) - 26);
  return { d: `M${x1},${y1} C${x1},${top} ${x2},${top} ${x2},${y2 - 2}`, lx: (x1 + x2) / 2, ly: top + 12 };
}

// drawGraph returns an <svg>. opts: status (step → tone ok/bad/warn/info),
// path (step names in the order the thread took them), taken ([{from, to}]
// step orders the thread took, from every step however long the thread),
// violations ([{from, to, label?, href?}] transitions the contract did not
// allow), edgeLabels (Map "from\0to" → text) and nodeNotes (Map step → the
// node's second line): the process map's figures; faded (Set of steps
// drawn as never reached).
export function drawGraph(graph, transitions, opts, title) {
  if (opts instanceof Map) opts = { status: opts };
  opts = opts || {};
  const L = layoutGraph(graph, transitions);
  const taken = new Set();
  const path = (opts.path || []).filter((s) => L.pos.has(s));
  for (let i = 1; i < path.length; i++) taken.add(path[i - 1] + '\u0000' + path[i]);
  const onPath = new Set(path);
  for (const e of opts.taken || []) {
    if (e.from) taken.add(e.from + '\u0000' + e.to);
    onPath.add(e.to); if (e.from) onPath.add(e.from);
  }
  const violated = (opts.violations || []).filter((v) => L.pos.has(v.from) && L.pos.has(v.to));
  const svg = el('svg', { viewBox: `0 0 ${L.width} ${L.height}`, width: L.width, height: L.height, role: 'img', 'aria-labelledby': 'graph-title graph-desc', id: 'contract-graph' });
  svg.appendChild(el('title', { id: 'graph-title' }, title || 'Contract graph'));
  svg.appendChild(el('desc', { id: 'graph-desc' }, L.nodes.map((n) => `${n.id}${(n.next || []).length ? ' → ' + n.next.join(', ') : ''}`).join('; ')));
  const defs = el('defs');
  for (const [id, cls] of [['arrow', 'g-arrow'], ['arrow-taken', 'g-arrow taken'], ['arrow-bad', 'g-arrow bad']]) {
    const m = el('marker', { id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: 'userSpaceOnUse', orient: 'auto-start-reverse' });
    m.appendChild(el('path', { d: 'M0,0 L10,5 L0,10 z', class: cls }));
    defs.appendChild(m);
  }
  svg.appendChild(defs);
  const root = el('g', { class: 'g-root' });
  svg.appendChild(root);
  for (const e of L.edges) {
    const p = edgePath(L, e);
    const isTaken = taken.has(e.from + '\u0000' + e.to);
    if (opts.edgeLabels && opts.edgeLabels.has(e.from + '\u0000' + e.to)) e.label = opts.edgeLabels.get(e.from + '\u0000' + e.to);
    const cls = 'g-edge' + (e.back || e.retry ? ' back' : '') + (isTaken ? ' taken' : '');
    root.appendChild(el('path', { d: p.d, class: cls, 'marker-end': isTaken ? 'url(#arrow-taken)' : 'url(#arrow)', 'data-edge': e.from + '→' + e.to }));
    if (e.label) root.appendChild(el('text', { x: p.lx, y: p.ly, 'text-anchor': 'middle', class: 'g-label' }, e.label));
  }
  for (const v of violated) {
    // An edge skipping a layer arcs above the nodes, so it does not run
    // through the steps between (or under their loops).
    const skip = L.layer.get(v.to) - L.layer.get(v.from) > 1;
    const p = skip ? arcAbove(L, v) : edgePath(L, { from: v.from, to: v.to, back: L.layer.get(v.to) <= L.layer.get(v.from) });
    root.appendChild(el('path', { d: p.d, class: 'g-edge violated', 'marker-end': 'url(#arrow-bad)', 'data-edge': v.from + '→' + v.to }));
    const label = el('text', { x: p.lx, y: p.ly - 2, 'text-anchor': 'middle', class: 'g-label bad' }, v.label || '✕ not allowed');
    if (v.href) {
      const a = el('a', { href: v.href, class: 'g-link', 'data-forbidden': v.from + '→' + v.to });
      a.appendChild(label); root.appendChild(a);
    } else root.appendChild(label);
  }
  for (const n of L.nodes) {
    const p = L.pos.get(n.id);
    const tone = opts.status && opts.status.get(n.id);
    const cls = ['g-node', L.entries.has(n.id) ? 'entry' : '', L.terminals.has(n.id) ? 'terminal' : '', tone ? 's-' + tone : '', onPath.has(n.id) ? 'on-path' : '', opts.faded && opts.faded.has(n.id) ? 'never' : ''].filter(Boolean).join(' ');
    const g = el('g', { class: cls, transform: `translate(${p.x},${p.y})`, 'data-step': n.id });
    g.appendChild(el('title', {}, `${n.id} (${n.type}${n.owner ? ', owner ' + n.owner : ''})${tone ? ' — ' + ({ ok: 'done', bad: 'failed or violated', warn: 'warnings', info: 'in progress' }[tone] || '') : ''}`));
    g.appendChild(el('rect', { width: W, height: H, rx: 8 }));
    g.appendChild(el('text', { x: 12, y: 21 }, n.id.length > 22 ? n.id.slice(0, 21) + '…' : n.id));
    const note = opts.nodeNotes && opts.nodeNotes.get(n.id);
    const sub = note != null ? note : [n.type, n.owner].filter(Boolean).join(' · ') + (L.terminals.has(n.id) ? ' · end' : L.entries.has(n.id) ? ' · start' : '');
    g.appendChild(el('text', { x: 12, y: 38, class: 'sub' }, sub.length > 26 ? sub.slice(0, 25) + '…' : sub));
    root.appendChild(g);
  }
  return svg;
}

// graphViewport wraps a drawn graph with pan and zoom. The initial zoom fits
// the width but never goes below MIN_FONT/FONT, so text stays readable.
export function graphViewport(svg) {
  const vb = svg.viewBox.baseVal;
  const minScale = MIN_FONT / FONT;
  const wrap = document.createElement('div');
  wrap.className = 'graph-viewport';
  wrap.tabIndex = 0;
  wrap.setAttribute('aria-label', 'Graph: drag to pan, Ctrl+wheel or the buttons to zoom');
  const root = svg.querySelector('.g-root');
  svg.removeAttribute('width'); svg.removeAttribute('height');
  svg.setAttribute('width', '100%');
  const viewH = Math.min(520, Math.max(160, vb.height));
  svg.setAttribute('height', String(viewH));
  svg.setAttribute('viewBox', `0 0 ${vb.width} ${vb.height}`);
  svg.setAttribute('preserveAspectRatio', 'xMinYMin meet');
  let scale = 1, tx = 0, ty = 0;
  // The svg maps viewBox to its box; we keep viewBox equal to the element's
  // pixel size so one unit is one CSS pixel and zoom is ours alone.
  const apply = () => {
    const wpx = wrap.clientWidth || vb.width;
    svg.setAttribute('viewBox', `0 0 ${wpx} ${viewH}`);
    root.setAttribute('transform', `translate(${tx},${ty}) scale(${scale})`);
    zoomLabel.textContent = Math.round(scale * 100) + '%';
    svg.dataset.scale = String(scale);
  };
  const fit = () => {
    const wpx = wrap.clientWidth || vb.width;
    scale = Math.max(minScale, Math.min(1, (wpx - 8) / vb.width, (viewH - 8) / vb.height));
    tx = Math.max(4, (wpx - vb.width * scale) / 2); ty = 4;
    apply();
  };
  const zoom = (f, cx, cy) => {
    const ns = Math.max(minScale, Math.min(3, scale * f));
    const px = cx === undefined ? (wrap.clientWidth || vb.width) / 2 : cx, py = cy === undefined ? viewH / 2 : cy;
    tx = px - (px - tx) * (ns / scale); ty = py - (py - ty) * (ns / scale);
    scale = ns; apply();
  };
  const btn = (label, title, fn) => { const b = document.createElement('button'); b.type = 'button'; b.className = 'btn-sm'; b.textContent = label; b.title = title; b.setAttribute('aria-label', title); b.addEventListener('click', fn); return b; };
  const zoomLabel = document.createElement('span');
  zoomLabel.className = 'muted zoom-level';
  const bar = document.createElement('div');
  bar.className = 'graph-tools';
  bar.append(btn('−', 'Zoom out', () => zoom(1 / 1.25)), zoomLabel, btn('+', 'Zoom in', () => zoom(1.25)), btn('Fit', 'Fit to view (text stays readable)', fit), btn('100%', 'Actual size', () => { scale = 1; tx = 4; ty = 4; apply(); }));
  let drag = null;
  svg.addEventListener('pointerdown', (e) => { drag = { x: e.clientX - tx, y: e.clientY - ty }; svg.setPointerCapture(e.pointerId); svg.classList.add('dragging'); });
  svg.addEventListener('pointermove', (e) => { if (drag) { tx = e.clientX - drag.x; ty = e.clientY - drag.y; apply(); } });
  svg.addEventListener('pointerup', () => { drag = null; svg.classList.remove('dragging'); });
  svg.addEventListener('wheel', (e) => {
    if (!e.ctrlKey && !e.metaKey) return;
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  wrap.addEventListener('keydown', (e) => {
    const k = { ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40] }[e.key];
    if (k) { tx += k[0]; ty += k[1]; apply(); e.preventDefault(); } else if (e.key === '+' || e.key === '=') zoom(1.25); else if (e.key === '-') zoom(1 / 1.25);
  });
  wrap.append(bar, svg);
  // Fit now (the root always carries a transform, even before the first
  // frame), and again once the viewport has its laid-out width.
  fit();
  requestAnimationFrame(fit);
  // The viewport's width changes after the first frame when its panel is
  // laid out late or the window turns: fit again until the user zooms or
  // pans, then keep their view (one unit stays one pixel either way).
  let touched = false;
  for (const ev of ['pointerdown', 'wheel', 'keydown']) wrap.addEventListener(ev, () => { touched = true; }, { capture: true });
  bar.addEventListener('click', () => { touched = true; }, { capture: true });
  if (typeof ResizeObserver === 'function') {
    let last = 0;
    new ResizeObserver(() => {
      const w = wrap.clientWidth;
      if (!w || w === last) return;
      last = w;
      if (touched) apply(); else fit();
    }).observe(wrap);
  }
  if (window.ResizeObserver) new ResizeObserver(() => apply()).observe(wrap);
  return wrap;
}
