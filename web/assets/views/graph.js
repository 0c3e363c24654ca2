// Contract graph drawn as SVG with a small layered layout: nodes are placed in
// columns by their shortest distance from an entry point, edges that go back
// (retries, loops) are dashed and routed below the nodes.
const NS = 'http://www.w3.org/2000/svg';
const W = 168, H = 50, GX = 70, GY = 26, PAD = 24;

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
  const seen = new Set();
  const addEdge = (from, to, label) => {
    if (!byId.has(from) || !byId.has(to)) return;
    const k = from + '\u0000' + to;
    if (seen.has(k)) {
      const e = edges.find((x) => x.from === from && x.to === to);
      if (label && !e.label) e.label = label;
      return;
    }
    seen.add(k);
    edges.push({ from, to, label });
  };
  for (const n of nodes) for (const t of n.next || []) addEdge(n.id, t);
  for (const tr of transitions || []) for (const t of tr.to || []) addEdge(tr.from, t, tr.maxRetries ? `retry ≤${tr.maxRetries}` : null);

  // Layers by BFS from entry points (or from nodes without incoming edges).
  const incoming = new Map(ids.map((id) => [id, 0]));
  for (const e of edges) incoming.set(e.to, incoming.get(e.to) + 1);
  let starts = ((graph && graph.entryPoints) || []).filter((id) => byId.has(id));
  if (!starts.length) starts = ids.filter((id) => incoming.get(id) === 0);
  if (!starts.length && ids.length) starts = [ids[0]];
  const layer = new Map();
  const queue = [];
  for (const s of starts) { layer.set(s, 0); queue.push(s); }
  while (queue.length) {
    const id = queue.shift();
    for (const e of edges) if (e.from === id && !layer.has(e.to)) { layer.set(e.to, layer.get(id) + 1); queue.push(e.to); }
  }
  let maxLayer = Math.max(0, ...layer.values());
  for (const id of ids) if (!layer.has(id)) layer.set(id, ++maxLayer); // unreachable nodes go last
  const cols = [];
  for (const id of ids) { const l = layer.get(id); (cols[l] = cols[l] || []).push(id); }
  const pos = new Map();
  const maxRows = Math.max(1, ...cols.filter(Boolean).map((c) => c.length));
  const height = PAD * 2 + maxRows * H + (maxRows - 1) * GY + 30;
  cols.forEach((col, ci) => {
    if (!col) return;
    const colH = col.length * H + (col.length - 1) * GY;
    const y0 = PAD + ((maxRows * H + (maxRows - 1) * GY) - colH) / 2;
    col.forEach((id, ri) => pos.set(id, { x: PAD + ci * (W + GX), y: y0 + ri * (H + GY) }));
  });
  const width = PAD * 2 + Math.max(1, cols.length) * W + Math.max(0, cols.length - 1) * GX;
  return { nodes, edges, pos, layer, width, height, terminals: new Set((graph && graph.terminalSteps) || []), entries: new Set(starts) };
}

// drawGraph returns an <svg>; stepStatus maps step name → tone (ok/bad/info).
export function drawGraph(graph, transitions, stepStatus, title) {
  const L = layoutGraph(graph, transitions);
  const svg = el('svg', { viewBox: `0 0 ${L.width} ${L.height}`, width: L.width, height: L.height, role: 'img', 'aria-labelledby': 'graph-title graph-desc', id: 'contract-graph' });
  svg.appendChild(el('title', { id: 'graph-title' }, title || 'Contract graph'));
  const desc = L.nodes.map((n) => `${n.id}${(n.next || []).length ? ' → ' + n.next.join(', ') : ''}`).join('; ');
  svg.appendChild(el('desc', { id: 'graph-desc' }, desc));
  const defs = el('defs');
  const marker = el('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.appendChild(el('path', { d: 'M0,0 L10,5 L0,10 z', class: 'g-arrow' }));
  defs.appendChild(marker);
  svg.appendChild(defs);

  for (const e of L.edges) {
    const a = L.pos.get(e.from), b = L.pos.get(e.to);
    const back = L.layer.get(e.to) <= L.layer.get(e.from);
    let d, lx, ly;
    if (!back) {
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
      d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2 - 2},${y2}`;
      lx = mx; ly = (y1 + y2) / 2 - 6;
    } else if (e.from === e.to) {
      const x = a.x + W / 2, y = a.y + H;
      d = `M${x - 20},${y} C${x - 30},${y + 34} ${x + 30},${y + 34} ${x + 20},${y + 2}`;
      lx = x; ly = y + 34;
    } else {
      const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y + H;
      const dip = Math.max(y1, y2) + 30;
      d = `M${x1},${y1} C${x1},${dip} ${x2},${dip} ${x2},${y2 + 2}`;
      lx = (x1 + x2) / 2; ly = dip - 2;
    }
    svg.appendChild(el('path', { d, class: 'g-edge' + (back ? ' back' : ''), 'marker-end': 'url(#arrow)' }));
    if (e.label) svg.appendChild(el('text', { x: lx, y: ly, 'text-anchor': 'middle', class: 'g-label' }, e.label));
  }
  for (const n of L.nodes) {
    const p = L.pos.get(n.id);
    const tone = stepStatus && stepStatus.get(n.id);
    const cls = ['g-node', L.entries.has(n.id) ? 'entry' : '', L.terminals.has(n.id) ? 'terminal' : '', tone ? 's-' + tone : ''].join(' ');
    const g = el('g', { class: cls, transform: `translate(${p.x},${p.y})`, 'data-step': n.id });
    g.appendChild(el('title', {}, `${n.id} (${n.type}${n.owner ? ', owner ' + n.owner : ''})${tone ? ' — ' + ({ ok: 'done', bad: 'failed', info: 'in progress' }[tone] || '') : ''}`));
    g.appendChild(el('rect', { width: W, height: H, rx: 8 }));
    const label = n.id.length > 22 ? n.id.slice(0, 21) + '…' : n.id;
    g.appendChild(el('text', { x: 12, y: 21 }, label));
    const sub = [n.type, n.owner].filter(Boolean).join(' · ') + (L.terminals.has(n.id) ? ' · end' : L.entries.has(n.id) ? ' · start' : '');
    g.appendChild(el('text', { x: 12, y: 38, class: 'sub' }, sub.length > 28 ? sub.slice(0, 27) + '…' : sub));
    svg.appendChild(g);
  }
  return svg;
}
