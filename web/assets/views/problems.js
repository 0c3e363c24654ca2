// Problems: "what broke, and why?" The unhealthy threads of a window grouped
// by cause — a contract version's rule at a step, or for free-form threads a
// step and the class of its failure message — biggest first, each with its
// trend over the window and a link to exactly its threads.
import { h, add, clear, table, select, alertBox } from '../ui.js';
import { gql, explain } from '../api.js';
import { link, navigate } from '../app.js';
import { fmtDateTime } from '../fmt.js';

const Q = `query P($hours: Int) { problems(hours: $hours) { since until bucketHours buckets total truncated
  groups { contractName contractVersion rule step messageClass count trend exampleThreadId } } }`;
const WINDOWS = [['24', 'Last 24 hours', '24h'], ['168', 'Last 7 days', '7d'], ['720', 'Last 30 days', '30d']];

// healthLegend says what the three words mean, the same on every page.
export function healthLegend() {
  return h('dl', { class: 'legend-terms', id: 'health-legend', 'aria-label': 'What the words mean' },
    h('dt', {}, h('span', { class: 'pill bad' }, 'Violated')), h('dd', {}, 'broke its contract: a critical or major issue (health VIOLATED).'),
    h('dt', {}, h('span', { class: 'pill bad' }, 'Failed')), h('dd', {}, 'no violation, but the thread ended failed or a step is left failed (health FAILED).'),
    h('dt', {}, h('span', { class: 'pill warn' }, 'Needs attention')), h('dd', {}, 'violated or failed: what this page groups.'));
}

// sparkline draws a trend as bars, one per bucket.
function sparkline(trend, label) {
  const max = Math.max(1, ...trend);
  const w = 6; const gap = 2; const hgt = 22;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${trend.length * (w + gap)} ${hgt}`); svg.setAttribute('width', String(trend.length * (w + gap))); svg.setAttribute('height', String(hgt));
  svg.setAttribute('role', 'img'); svg.setAttribute('class', 'spark');
  const t = document.createElementNS(ns, 'title'); t.textContent = label; svg.appendChild(t);
  trend.forEach((n, i) => {
    const r = document.createElementNS(ns, 'rect');
    const bh = n ? Math.max(2, (n / max) * hgt) : 1;
    r.setAttribute('x', String(i * (w + gap))); r.setAttribute('y', String(hgt - bh)); r.setAttribute('width', String(w)); r.setAttribute('height', String(bh));
    r.setAttribute('class', n ? 'spark-bar' : 'spark-zero');
    svg.appendChild(r);
  });
  return svg;
}

// listLink is the thread list filtered to one cause.
export function causeQuery(g, when) {
  const p = new URLSearchParams();
  p.set('health', 'FAILED,VIOLATED');
  if (g.contractName) { p.set('contract', g.contractName); p.set('version', String(g.contractVersion)); }
  if (g.rule) p.set('rule', g.rule);
  if (g.step) p.set('step', g.step);
  if (when) p.set('when', when);
  return p.toString();
}

export async function renderProblems(ctx) {
  const hours = WINDOWS.some(([v]) => v === ctx.query.get('hours')) ? ctx.query.get('hours') : '24';
  const when = WINDOWS.find(([v]) => v === hours)[2];
  const win = select('hours', WINDOWS.map(([v, l]) => [v, l]), hours);
  win.id = 'problems-window';
  win.addEventListener('change', () => navigate('problems' + (win.value === '24' ? '' : '?hours=' + win.value)));
  const body = h('div', {});
  try {
    const rep = (await gql(Q, { hours: Number(hours) })).problems;
    const span = (i) => `${fmtDateTime(rep.buckets[i])} + ${rep.bucketHours} h`;
    add(body, h('p', { class: 'muted', id: 'problems-total' },
      `${rep.total} thread${rep.total === 1 ? '' : 's'} need${rep.total === 1 ? 's' : ''} attention, in ${rep.groups.length} cause${rep.groups.length === 1 ? '' : 's'}`,
      rep.truncated ? ' (the largest causes are shown)' : '', ` · from ${fmtDateTime(rep.since)} to ${fmtDateTime(rep.until)}`),
    table([
      { label: 'Cause', class: 'col-cause', render: (g) => h('div', {},
        h('div', {}, h('strong', { class: 'mono' }, g.rule.replace(/_/g, ' ')), ' at ', h('code', {}, g.step)),
        g.messageClass ? h('div', { class: 'reason bad small' }, g.messageClass) : null) },
      { label: 'Contract', render: (g) => g.contractName ? link('contracts/' + encodeURIComponent(g.contractName) + '/' + g.contractVersion, `${g.contractName} v${g.contractVersion}`) : h('span', { class: 'muted' }, 'free-form') },
      { label: 'Threads', render: (g) => link('threads?' + causeQuery(g, when), String(g.count), { class: 'num cause-link', 'data-cause': [g.contractName || '', g.contractVersion || '', g.rule, g.step, g.messageClass || ''].join('|'), title: 'The threads of this cause' }) },
      { label: 'Trend', render: (g) => h('span', { class: 'trend' }, sparkline(g.trend, g.trend.map((n, i) => `${span(i)}: ${n}`).join('; '))) },
      { label: 'Example', render: (g) => g.exampleThreadId ? link('threads/' + encodeURIComponent(g.exampleThreadId), g.exampleThreadId.slice(0, 8) + '…', { class: 'mono small' }) : h('span', { class: 'muted small' }, 'deleted') },
    ], rep.groups.map((g) => Object.assign(g, { __attrs: { 'data-group': g.rule + '@' + g.step } })), { empty: 'Nothing needed attention in this window.', caption: 'Causes of unhealthy threads' }));
  } catch (e) {
    clear(body).appendChild(alertBox('bad', 'Could not load the problems', explain(e)));
  }
  return h('div', {},
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Problems'),
      h('p', { class: 'desc' }, 'Threads that need attention, grouped by what went wrong first. Each count opens exactly those threads.')),
      h('div', { class: 'field' }, h('label', { for: 'problems-window' }, 'Window'), win)),
    h('section', { class: 'panel', 'aria-labelledby': 'causes-h' }, h('div', { class: 'panel-head' }, h('h2', { id: 'causes-h' }, 'Causes')), h('div', { class: 'panel-body' }, body)),
    h('section', { class: 'panel', 'aria-label': 'Legend' }, h('div', { class: 'panel-body' }, healthLegend())));
}
