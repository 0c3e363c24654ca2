// Process map: on a contract version's page, the graph overlaid with what
// its threads actually did in a window — how many reached each step and
// took each edge, with p50/p95 durations, edges the contract forbids in red
// with their counts (linking to an example thread), and steps never reached.
// Read from a roll-up (GraphQL processMap), so it costs the same at any size.
import { h, clear, table, select, alertBox } from '../ui.js';
import { gql, explain } from '../api.js';
import { link, href } from '../app.js';
import { drawGraph, graphViewport } from './graph.js';
import { fmtDuration, fmtDateTime } from '../fmt.js';

const Q_NODES = `query PN($n: String!, $v: Int, $from: String) { processMap(contractName: $n, version: $v, from: $from) {
  since until started neverReached nodes { step count p50Ms p95Ms inContract } } }`;
const Q_EDGES = `query PE($n: String!, $v: Int, $from: String) { processMap(contractName: $n, version: $v, from: $from) {
  edges { from to count p50Ms p95Ms allowed exampleThreadId } } }`;
const WINDOWS = [['24', 'Last 24 hours'], ['168', 'Last 7 days'], ['720', 'Last 30 days']];

const ms = (v) => (v == null ? '—' : fmtDuration(v));

export function processMapPanel(name, version, graph) {
  const body = h('div', { class: 'panel-body', id: 'process-map' });
  const win = select('pm-window', WINDOWS, '168');
  win.id = 'pm-window';
  const load = async () => {
    clear(body).appendChild(h('p', { class: 'loading' }, 'Loading…'));
    const from = new Date(Date.now() - Number(win.value) * 3600e3).toISOString();
    try {
      const [n, e] = await Promise.all([gql(Q_NODES, { n: name, v: version, from }), gql(Q_EDGES, { n: name, v: version, from })]);
      draw(n.processMap, e.processMap.edges);
    } catch (err) { clear(body).appendChild(alertBox('bad', 'Could not load the process map', explain(err))); }
  };
  const draw = (pm, edges) => {
    clear(body);
    const nodeNotes = new Map(); const edgeLabels = new Map();
    for (const n of pm.nodes) nodeNotes.set(n.step, `${n.count}× · p50 ${ms(n.p50Ms)}`);
    for (const s of pm.neverReached) nodeNotes.set(s, 'never reached');
    const violations = [];
    for (const e of edges) {
      if (!e.from) continue;
      if (e.allowed) edgeLabels.set(e.from + '\u0000' + e.to, `${e.count}×`);
      else violations.push({ from: e.from, to: e.to, label: `✕ ${e.count}×`, href: e.exampleThreadId ? href('threads/' + encodeURIComponent(e.exampleThreadId)) : '' });
    }
    const taken = edges.filter((e) => e.allowed && e.from).map((e) => ({ from: e.from, to: e.to }));
    body.appendChild(h('p', { class: 'muted', id: 'pm-summary' }, `${pm.started} thread${pm.started === 1 ? '' : 's'} started from ${fmtDateTime(pm.since)} to ${fmtDateTime(pm.until)}`,
      pm.neverReached.length ? ` · never reached: ${pm.neverReached.join(', ')}` : ''));
    if (graph) {
      body.appendChild(h('div', { class: 'graph-wrap' }, graphViewport(drawGraph(graph.graph, graph.transitions,
        { taken, violations, edgeLabels, nodeNotes, faded: new Set(pm.neverReached) }, `Process map of ${name} v${version}`))));
    }
    body.appendChild(table([
      { label: 'From', render: (e) => e.from ? h('code', {}, e.from) : h('span', { class: 'muted' }, '(thread start)') },
      { label: 'To', render: (e) => h('code', {}, e.to) },
      { label: 'Threads', render: (e) => h('span', { class: 'num' + (e.allowed ? '' : ' bad-text'), 'data-count': String(e.count) }, String(e.count)) },
      { label: 'p50 · p95', render: (e) => h('span', { class: 'num' }, `${ms(e.p50Ms)} · ${ms(e.p95Ms)}`) },
      { label: 'Contract', render: (e) => e.allowed ? h('span', { class: 'pill ok' }, 'allowed') : h('span', {}, h('span', { class: 'pill bad' }, 'not allowed'), ' ', e.exampleThreadId ? link('threads/' + encodeURIComponent(e.exampleThreadId), 'example', { class: 'small' }) : h('span', { class: 'muted small' }, 'examples deleted')) },
    ], edges.map((e) => Object.assign(e, { __attrs: { 'data-edge': (e.from || '') + '→' + e.to, 'data-allowed': String(e.allowed) } })),
    { empty: 'No thread of this version ran in this window.', caption: 'Step orders taken' }));
    const extra = pm.nodes.filter((n) => !n.inContract);
    if (extra.length) body.appendChild(alertBox('warn', 'Steps the contract does not define', extra.map((n) => `${n.step} (${n.count}×)`).join(', ')));
  };
  win.addEventListener('change', load);
  load();
  return h('section', { class: 'panel', 'aria-labelledby': 'pm-h', id: 'process-map-panel' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'pm-h' }, 'As it really runs'), h('div', { class: 'field row' }, h('label', { for: 'pm-window' }, 'Window'), win)),
    h('p', { class: 'muted small', style: 'padding: 0 16px' }, 'Each step and edge with how many step identities reached or took it and their p50/p95 time (estimated to within a factor of 2); red edges are orders the contract forbids, linking to an example.'),
    body);
}
