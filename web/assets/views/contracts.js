// Contracts (list, one version: graph, YAML, parties, threads, per-step
// failures and violations) and the Overview (threads per hour over 24 h and
// 7 days, violation rates by contract and step, top failing steps). Charts
// are plain SVG.
import { h, table, alertBox, confirmDialog, toast } from '../ui.js';
import { api, gql, explain } from '../api.js';
import { latestCheckpoint, overviewCard } from './tlog.js';
import { link, navigate, state } from '../app.js';
import { drawGraph, graphViewport } from './graph.js';
import { processMapPanel } from './processmap.js';
import { versionDiffPanel } from './versiondiff.js';
import { healthBadge, statusPill, fmtDuration, timeTag, fmtDateTime } from '../fmt.js';

const Q_CSTATS = `{ contractStats { name version threads active completed failed cancelled violated healthFailed warnings } }`;
const Q_STEPSTATS = `query S($n: String!, $v: Int) { stepStats(contractName: $n, contractVersion: $v) { stepName attempts failed violated warnings } }`;
const Q_GRAPH = `query G($name: String!, $version: Int) { contractGraph(name: $name, version: $version) {
  graph { nodes { id owner type next required } entryPoints terminalSteps } transitions { from to maxRetries } parties } }`;
const Q_THREADS = `query T($n: String, $v: Int) { threads(contractName: $n, contractVersion: $v, limit: 10) { totalCount threads {
  id label status startedAt durationMs health { status firstIssue { stepName message } } } } }`;
const Q_OVERVIEW = `query O($hours: Int, $limit: Int) { overview(hours: $hours, limit: $limit) { hours { start started completed failed } steps { stepName attempts failed violated warnings } } }`;

const pct = (a, b) => (b ? (100 * a / b) : 0);
const pctText = (a, b) => (b ? pct(a, b).toFixed(pct(a, b) < 10 ? 1 : 0) + ' %' : '—');

export async function renderContracts() {
  const [list, stats] = await Promise.all([api.get('/v1/contracts'), gql(Q_CSTATS)]);
  const byName = new Map();
  for (const s of stats.contractStats) {
    const e = byName.get(s.name) || { threads: 0, active: 0, failed: 0, bad: 0, versions: [] };
    e.threads += s.threads; e.active += s.active; e.failed += s.failed; e.bad += s.violated + s.healthFailed; e.versions.push(s.version);
    byName.set(s.name, e);
  }
  // Each contract's versions as stored (a deleted version leaves a gap).
  const vers = await Promise.all((list.contracts || []).map((c) => api.get('/v1/contracts/' + encodeURIComponent(c.name) + '/versions')
    .then((d) => (d.versions || []).map((v) => v.version)).catch(() => [c.latest_version || c.version])));
  const rows = (list.contracts || []).map((c, i) => Object.assign({}, c, { vs: vers[i], s: byName.get(c.name) || { threads: 0, active: 0, failed: 0, bad: 0, versions: [] } }));
  const writer = state.me && ['admin', 'member'].includes(state.me.role);
  return h('div', {},
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Contracts'), h('p', { class: 'desc' }, 'Every contract, its versions and how its threads are doing.')),
      writer ? link('contracts/new', 'New contract', { class: 'btn btn-primary', id: 'new-contract' }) : null),
    h('section', { class: 'panel' }, table([
      { label: 'Contract', render: (c) => h('div', {}, link('contracts/' + encodeURIComponent(c.name) + (c.name === 'new' ? '/' + c.version : ''), c.name, { 'data-contract': c.name }), c.description ? h('div', { class: 'muted small' }, c.description) : null) },
      { label: 'Versions', render: (c) => h('span', { 'data-versions': c.name }, c.vs.slice(0, 8).map((v) => link('contracts/' + encodeURIComponent(c.name) + '/' + v, 'v' + v, { class: 'ver' })).flatMap((a, i) => i ? [' ', a] : [a]),
        c.vs.length > 8 ? h('span', { class: 'muted small' }, ` +${c.vs.length - 8} older`) : null) },
      { label: 'Steps', render: (c) => h('span', { class: 'num', 'data-steps': c.name }, String(c.step_count || 0)) },
      { label: 'Threads', render: (c) => link('threads?contract=' + encodeURIComponent(c.name), String(c.s.threads), { class: 'num', 'data-threads': c.name }) },
      { label: 'Active', render: (c) => h('span', { class: 'num' }, String(c.s.active)) },
      { label: 'Failed or violated', render: (c) => c.s.bad ? link('threads?contract=' + encodeURIComponent(c.name) + '&health=FAILED,VIOLATED', `${c.s.bad} (${pctText(c.s.bad, c.s.threads)})`, { class: 'num bad-text' }) : h('span', { class: 'muted' }, '0') },
    ], rows, { empty: 'No contracts yet. Upload one with POST /v1/contracts.', caption: 'Contracts' })));
}

export async function renderContract(ctx) {
  const name = ctx.params[0];
  const version = /^\d+$/.test(ctx.params[1] || '') ? Number(ctx.params[1]) : 0;
  const path = '/v1/contracts/' + encodeURIComponent(name) + (version ? '/versions/' + version : '');
  const ct = await api.get(path);
  const v = ct.version;
  const [versions, graph, steps, threads] = await Promise.allSettled([
    api.get('/v1/contracts/' + encodeURIComponent(name) + '/versions'),
    gql(Q_GRAPH, { name, version: v }), gql(Q_STEPSTATS, { n: name, v }), gql(Q_THREADS, { n: name, v }),
  ]);
  const crumbs = h('div', { class: 'crumbs' }, link('contracts', 'Contracts'), ' / ', name, ' / v' + ct.version);
  const vers = versions.status === 'fulfilled' ? versions.value.versions : [];
  const graphBody = h('div', { class: 'graph-wrap' });
  if (graph.status === 'fulfilled') graphBody.appendChild(graphViewport(drawGraph(graph.value.contractGraph.graph, graph.value.contractGraph.transitions, {}, `Contract ${name} v${ct.version}`)));
  else graphBody.appendChild(alertBox('bad', 'Could not load the graph', explain(graph.reason)));
  // Worst steps first, then the contract's steps no thread has reached.
  const st = steps.status === 'fulfilled' ? steps.value.stepStats.slice() : [];
  for (const x of ct.steps || []) if (!st.some((r) => r.stepName === x.name)) st.push({ stepName: x.name, attempts: 0, failed: 0, violated: 0, warnings: 0 });
  const th = threads.status === 'fulfilled' ? threads.value.threads : { totalCount: 0, threads: [] };
  const threadsLink = 'threads?contract=' + encodeURIComponent(name) + '&version=' + ct.version;
  const msg = h('div', { id: 'version-msg', 'aria-live': 'polite' });
  return h('div', {}, crumbs,
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, name, h('span', { class: 'muted' }, ' v' + ct.version)), h('p', { class: 'desc' }, ct.description || 'No description.')),
      h('div', { class: 'row' }, vers.map((x) => link('contracts/' + encodeURIComponent(name) + '/' + x.version, 'v' + x.version, { class: 'btn-sm' + (x.version === ct.version ? ' current' : ''), 'aria-current': x.version === ct.version ? 'page' : null })),
        link('contracts/' + encodeURIComponent(name) + '/edit', state.me && ['admin', 'member'].includes(state.me.role) ? 'Edit' : 'Open in editor', { class: 'btn btn-sm', id: 'edit-contract' }),
        deleteVersionButton(name, ct.version, th.totalCount, msg))),
    msg,
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('div', { class: 'k' }, 'Parties'), h('div', { class: 'v', id: 'contract-parties' }, (ct.parties || []).join(', ') || '—')),
      h('div', { class: 'card' }, h('div', { class: 'k' }, 'Entry → terminal'), h('div', { class: 'v' }, (ct.entry_points || []).join(', ') + ' → ' + (ct.terminal_steps || []).join(', '))),
      h('div', { class: 'card' }, h('div', { class: 'k' }, 'Threads of this version'), h('div', { class: 'v' }, link(threadsLink, String(th.totalCount)))),
      h('div', { class: 'card' }, h('div', { class: 'k' }, 'Uploaded'), h('div', { class: 'v' }, ct.created_at ? timeTag(ct.created_at) : '—'))),
    h('section', { class: 'panel' }, h('h2', {}, 'Graph'), graphBody),
    processMapPanel(name, ct.version, graph.status === 'fulfilled' ? graph.value.contractGraph : null),
    versionDiffPanel(name, ct.version, vers.map((x) => x.version).filter((x) => x !== ct.version).sort((a, b) => b - a), Number(ctx.query.get('compare'))),
    h('section', { class: 'panel', id: 'step-stats' }, h('h2', {}, 'Steps: failures and violations'), table([
      { label: 'Step', render: (s) => h('span', { class: 'mono' }, s.stepName) },
      { label: 'Attempts', render: (s) => h('span', { class: 'num' }, String(s.attempts)) },
      { label: 'Failed', render: (s) => h('span', { class: 'num' + (s.failed ? ' bad-text' : '') }, `${s.failed} (${pctText(s.failed, s.attempts)})`) },
      { label: 'Violated', render: (s) => h('span', { class: 'num' + (s.violated ? ' bad-text' : '') }, `${s.violated} (${pctText(s.violated, s.attempts)})`) },
      { label: 'Warnings', render: (s) => h('span', { class: 'num' }, String(s.warnings)) },
    ], st, { empty: 'No thread has run this version yet.', caption: 'Per-step failures and violations' })),
    h('section', { class: 'panel' }, h('div', { class: 'panel-head' }, h('h2', {}, 'Latest threads'), h('span', { class: 'muted', id: 'contract-threads-count' }, `showing ${th.threads.length} of ${th.totalCount} `, th.totalCount > th.threads.length ? link(threadsLink, 'see all →') : null)), table([
      { label: 'Thread', render: (t) => h('div', {}, link('threads/' + encodeURIComponent(t.id), t.label || t.id, { class: 'mono' }), t.health.firstIssue ? h('div', { class: 'reason bad' }, t.health.firstIssue.stepName + ': ' + t.health.firstIssue.message) : null) },
      { label: 'Health', render: (t) => healthBadge(t.health) },
      { label: 'Status', render: (t) => statusPill(t.status) },
      { label: 'Duration', render: (t) => fmtDuration(t.durationMs) },
      { label: 'Started', render: (t) => timeTag(t.startedAt) },
    ], th.threads, { empty: 'No threads yet.', caption: 'Threads' })),
    h('section', { class: 'panel' }, h('h2', {}, ct.source_format === 'gherkin' ? 'Source (Gherkin)' : 'Source (YAML)'), h('pre', { class: 'json', id: 'contract-source' }, ct.source || '')));
}

// deleteVersionButton (administrators): deletes a version no thread uses,
// after a confirmation; a version still in use answers 409
// contract_version_in_use, shown as such with a link to its threads.
function deleteVersionButton(name, version, used, msg) {
  const me = state.me;
  if (!me || me.role !== 'admin' || me.kind === 'service_account') return null;
  // A version threads use cannot be deleted: say so instead of offering it.
  if (used > 0) return h('span', { class: 'muted small', id: 'version-in-use', title: 'Delete its threads first' }, `v${version} is used by ${used} thread${used === 1 ? '' : 's'}: it cannot be deleted`);
  const b = h('button', { type: 'button', class: 'btn-sm btn-danger', id: 'delete-version' }, `Delete v${version}`);
  b.addEventListener('click', async () => {
    msg.replaceChildren();
    const ok = await confirmDialog({ title: `Delete ${name} v${version}?`,
      message: used ? `${used} thread${used === 1 ? ' was' : 's were'} started with this version, so the engine will refuse: delete those threads first.`
        : `Version ${version} of ${name}, its graph and its YAML will be deleted for good. No thread uses it.`,
      confirmLabel: `Delete v${version}`, danger: true });
    if (!ok) return;
    b.disabled = true;
    try {
      await api.del('/v1/contracts/' + encodeURIComponent(name) + '/versions/' + version);
      toast(`${name} v${version} deleted`);
      navigate('contracts');
    } catch (err) {
      b.disabled = false;
      if (err.code === 'contract_version_in_use') {
        msg.appendChild(alertBox('bad', `Cannot delete ${name} v${version}: threads use it`, h('span', {}, err.message + ' ',
          link('threads?contract=' + encodeURIComponent(name) + '&version=' + version, 'See its threads →'))));
      } else msg.appendChild(alertBox('bad', `Could not delete ${name} v${version}`, explain(err)));
    }
  });
  return b;
}

// barChart draws series per hour as grouped bars with a labelled y axis.
function barChart(hours, id, title) {
  const NS = 'http://www.w3.org/2000/svg';
  const W = 760, H = 200, L = 40, B = 24, T = 10;
  const series = [['started', 'var(--info)'], ['completed', 'var(--ok)'], ['failed', 'var(--bad)']];
  const max = Math.max(1, ...hours.flatMap((b) => series.map(([k]) => b[k])));
  const n = hours.length; const slot = (W - L) / n; const bw = Math.max(1, (slot - 2) / 3);
  const svg = document.createElementNS(NS, 'svg');
  const at = (tag, a, txt) => { const e = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(a)) e.setAttribute(k, String(v)); if (txt !== undefined) e.textContent = txt; svg.appendChild(e); return e; };
  svg.setAttribute('viewBox', `0 0 ${W} ${H + B}`); svg.setAttribute('role', 'img'); svg.setAttribute('id', id); svg.setAttribute('class', 'chart');
  at('title', {}, title);
  for (const f of [0, 0.5, 1]) {
    const y = T + (H - T) * (1 - f);
    at('line', { x1: L, x2: W, y1: y, y2: y, class: 'grid' });
    at('text', { x: L - 6, y: y + 4, 'text-anchor': 'end', class: 'axis' }, String(Math.round(max * f)));
  }
  hours.forEach((b, i) => {
    series.forEach(([k, c], j) => {
      const v = b[k]; if (!v) return;
      const hh = (H - T) * v / max;
      const r = at('rect', { x: L + i * slot + 1 + j * bw, y: H - hh, width: bw, height: hh, fill: c, 'data-series': k });
      const tt = document.createElementNS(NS, 'title'); tt.textContent = `${fmtDateTime(b.start)}: ${v} ${k}`; r.appendChild(tt);
    });
    const every = Math.ceil(n / 8);
    if (i % every === 0) at('text', { x: L + i * slot + slot / 2, y: H + 16, 'text-anchor': 'middle', class: 'axis' }, n > 24 ? fmtDateTime(b.start).slice(5, 13) + 'h' : fmtDateTime(b.start).slice(11, 16));
  });
  return svg;
}

function rateBars(rows, label, value, total, id) {
  return h('div', { class: 'rates', id }, rows.length ? rows.map((r) => {
    const p = pct(value(r), total(r));
    return h('div', { class: 'rate' }, h('span', { class: 'rate-label mono' }, label(r)),
      h('span', { class: 'rate-bar' }, h('span', { style: `width:${Math.min(100, p)}%` })),
      h('span', { class: 'num rate-num' }, `${pctText(value(r), total(r))} · ${value(r)}/${total(r)}`));
  }) : h('div', { class: 'empty' }, 'Nothing recorded in this window.'));
}

export async function renderOverview() {
  const [day, week, cs] = await Promise.all([gql(Q_OVERVIEW, { hours: 24, limit: 10 }), gql(`query { overview(hours: 168, limit: 1) { hours { start started completed failed } } }`), gql(Q_CSTATS)]);
  const cp = await latestCheckpoint().catch(() => null);
  const d = day.overview; const w = week.overview;
  const sum = (l, k) => l.reduce((a, b) => a + b[k], 0);
  const legend = h('div', { class: 'graph-legend' }, h('span', { style: '--c: var(--info)' }, 'started'), h('span', { style: '--c: var(--ok)' }, 'completed'), h('span', { style: '--c: var(--bad)' }, 'ended failed'));
  const contracts = cs.contractStats.filter((c) => c.threads);
  // The axis labels are hours in the zone the UI shows (its toggle): say which.
  const zone = fmtDateTime(new Date().toISOString()).split(' ').pop();
  const steps = d.steps.filter((s) => s.attempts);
  // On a phone the charts scroll inside their panels: start at the newest hours.
  requestAnimationFrame(() => { for (const c of document.querySelectorAll('.panel-body > .chart')) c.parentElement.scrollLeft = c.parentElement.scrollWidth; });
  return h('div', {},
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Overview'), h('p', { class: 'desc' }, 'Threads per hour and where they fail. ', link('problems', 'What needs attention, by cause →', { id: 'to-problems' })))),
    h('div', { class: 'cards' },
      h('div', { class: 'card' }, h('div', { class: 'k' }, 'Started, 24 h'), h('div', { class: 'v', id: 'started-24h' }, String(sum(d.hours, 'started')))),
      h('div', { class: 'card' }, h('div', { class: 'k' }, 'Completed, 24 h'), h('div', { class: 'v' }, String(sum(d.hours, 'completed')))),
      h('div', { class: 'card' }, h('div', { class: 'k', title: 'Threads that ended with status failed; violated threads that are still running are on the Problems page' }, 'Ended failed, 24 h'), h('div', { class: 'v bad-text' }, String(sum(d.hours, 'failed')))),
      h('div', { class: 'card' }, h('div', { class: 'k' }, 'Started, 7 days'), h('div', { class: 'v', id: 'started-7d' }, String(sum(w.hours, 'started')))),
      overviewCard(cp)),
    h('section', { class: 'panel' }, h('h2', {}, `Last 24 hours (${zone})`), h('div', { class: 'panel-body' }, barChart(d.hours, 'chart-24h', 'Threads per hour, last 24 hours')), legend.cloneNode(true)),
    h('section', { class: 'panel' }, h('h2', {}, `Last 7 days (${zone})`), h('div', { class: 'panel-body' }, barChart(w.hours, 'chart-7d', 'Threads per hour, last 7 days')), legend),
    h('div', { class: 'two-col' },
      h('section', { class: 'panel' }, h('h2', {}, 'Violation rate by contract, all threads'), h('div', { class: 'panel-body' },
        rateBars(contracts, (c) => `${c.name} v${c.version}`, (c) => c.violated, (c) => c.threads, 'rate-contracts'))),
      h('section', { class: 'panel' }, h('h2', {}, 'Violation rate by step, 24 h'), h('div', { class: 'panel-body' },
        rateBars(steps.filter((s) => s.violated), (s) => s.stepName, (s) => s.violated, (s) => s.attempts, 'rate-steps')))),
    h('section', { class: 'panel', id: 'top-failing' }, h('h2', {}, 'Top failing steps, 24 h'), table([
      { label: 'Step', render: (s) => link('threads?' + new URLSearchParams({ health: 'FAILED,VIOLATED', step: s.stepName, when: '24h' }).toString(), s.stepName, { class: 'mono', title: 'Threads whose first problem is at this step' }) },
      { label: 'Failed attempts', render: (s) => h('span', { class: 'num' + (s.failed ? ' bad-text' : '') }, `${s.failed} of ${s.attempts} (${pctText(s.failed, s.attempts)})`) },
      { label: 'Violations', render: (s) => h('span', { class: 'num' }, String(s.violated)) },
      { label: 'Warnings', render: (s) => h('span', { class: 'num' }, String(s.warnings)) },
    ], steps.filter((x) => x.failed || x.violated), { empty: 'No step failed or broke a rule in the last 24 hours.', caption: 'Top failing steps' })));
}


