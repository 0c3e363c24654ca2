// Version-to-version diff on a contract version's page: pick another
// version of the same contract and see what changed in the contract (steps,
// transitions, rules, settings added, removed or changed: GraphQL
// contractDiff, computed from the compiled contracts) and how both versions
// really ran over the same window, side by side (processMap of each).
import { h, clear, table, select, alertBox } from '../ui.js';
import { gql, explain } from '../api.js';
import { fmtDuration } from '../fmt.js';

const Q_DIFF = `query D($n: String!, $a: Int!, $b: Int!) { contractDiff(name: $n, from: $a, to: $b) }`;
const Q_MAP = `query M($n: String!, $v: Int, $from: String) { processMap(contractName: $n, version: $v, from: $from) {
  started nodes { step count p50Ms p95Ms } edges { from to count p50Ms p95Ms } } }`;
const WINDOWS = [['24', 'Last 24 hours'], ['168', 'Last 7 days'], ['720', 'Last 30 days']];
const ms = (v) => (v == null ? '—' : fmtDuration(v));
const KIND = { added: 'ok', removed: 'bad', changed: 'warn' };

// versionDiffPanel: version is the page's version; others are the
// contract's other stored versions (newest first); initial, from ?compare=.
export function versionDiffPanel(name, version, others, initial) {
  if (!others.length) return null;
  const pick = select('compare', others.map((v) => [String(v), 'v' + v]), String(others.includes(initial) ? initial : others[0]));
  pick.id = 'compare-version';
  const win = select('compare-window', WINDOWS, '168');
  win.id = 'compare-window';
  const body = h('div', { class: 'panel-body', id: 'version-diff' });
  const load = async () => {
    const other = Number(pick.value);
    // Older version first, so "added" reads forward in time.
    const [a, b] = other < version ? [other, version] : [version, other];
    const from = new Date(Date.now() - Number(win.value) * 3600e3).toISOString();
    clear(body).appendChild(h('p', { class: 'loading' }, 'Loading…'));
    try {
      const [d, ma, mb] = await Promise.all([gql(Q_DIFF, { n: name, a, b }),
        gql(Q_MAP, { n: name, v: a, from }), gql(Q_MAP, { n: name, v: b, from })]);
      // contractDiff is JSON text: { from, to, changes: [{ part, kind, name, details }] }.
      const raw = JSON.parse(d.contractDiff);
      const of = (part) => raw.changes.filter((c) => c.part === part);
      draw({ from: raw.from, to: raw.to, same: !raw.changes.length, steps: of('step'), transitions: of('transition'), rules: of('rule'), settings: of('setting') },
        ma.processMap, mb.processMap);
    } catch (err) { clear(body).appendChild(alertBox('bad', 'Could not compare the versions', explain(err))); }
  };
  const changeList = (title, id, items) => h('div', { class: 'diff-group', id },
    h('h3', {}, title, ' ', h('span', { class: 'muted small' }, String(items.length))),
    items.length ? h('ul', { class: 'diff-list' }, items.map((c) => h('li', { 'data-kind': c.kind, 'data-name': c.name },
      h('span', { class: 'pill ' + KIND[c.kind] }, c.kind), ' ', h('code', {}, c.name),
      c.details.length ? h('span', { class: 'muted small' }, ' — ' + c.details.join('; ')) : null)))
      : h('p', { class: 'muted small' }, 'No change.'));
  const sideBySide = (v, a, b, key, label, caption) => {
    const A = new Map(a.map((x) => [key(x), x])); const B = new Map(b.map((x) => [key(x), x]));
    const keys = [...new Set([...A.keys(), ...B.keys()])].sort();
    const cell = (m, k, f) => { const x = m.get(k); return x ? f(x) : h('span', { class: 'muted' }, '—'); };
    return table([
      { label, render: (r) => h('code', {}, r.k) },
      { label: `v${v.a} threads`, render: (r) => cell(A, r.k, (x) => h('span', { class: 'num', 'data-count-a': String(x.count) }, String(x.count))) },
      { label: `v${v.a} p50 · p95`, render: (r) => cell(A, r.k, (x) => h('span', { class: 'num' }, `${ms(x.p50Ms)} · ${ms(x.p95Ms)}`)) },
      { label: `v${v.b} threads`, render: (r) => cell(B, r.k, (x) => h('span', { class: 'num', 'data-count-b': String(x.count) }, String(x.count))) },
      { label: `v${v.b} p50 · p95`, render: (r) => cell(B, r.k, (x) => h('span', { class: 'num' }, `${ms(x.p50Ms)} · ${ms(x.p95Ms)}`)) },
    ], keys.map((k) => ({ k, __attrs: { 'data-key': k } })), { empty: 'Neither version ran in this window.', caption });
  };
  const draw = (d, ma, mb) => {
    clear(body);
    body.appendChild(h('p', { id: 'diff-summary' }, d.same ? `v${d.from} and v${d.to} define the same process.`
      : `From v${d.from} to v${d.to}: ${[[d.steps, 'step'], [d.transitions, 'transition'], [d.rules, 'rule'], [d.settings, 'setting']].map(([l, w]) => `${l.length} ${w}${l.length === 1 ? '' : 's'}`).join(', ')} changed.`));
    body.appendChild(h('div', { class: 'diff-groups' },
      changeList('Steps', 'diff-steps', d.steps), changeList('Transitions', 'diff-transitions', d.transitions),
      changeList('Rules', 'diff-rules', d.rules), changeList('Settings', 'diff-settings', d.settings)));
    const v = { a: d.from, b: d.to };
    body.appendChild(h('h3', {}, 'As they really ran'));
    body.appendChild(h('p', { class: 'muted small', id: 'diff-started' }, `Threads started in the window: v${d.from} ${ma.started}, v${d.to} ${mb.started}.`));
    body.appendChild(h('div', { id: 'diff-nodes' }, sideBySide(v, ma.nodes, mb.nodes, (n) => n.step, 'Step', 'Steps of both versions')));
    body.appendChild(h('div', { id: 'diff-edges', style: 'margin-top: 12px' }, sideBySide(v, ma.edges.filter((e) => e.from), mb.edges.filter((e) => e.from), (e) => e.from + ' → ' + e.to, 'Order', 'Step orders of both versions')));
  };
  pick.addEventListener('change', load);
  win.addEventListener('change', load);
  load();
  return h('section', { class: 'panel', 'aria-labelledby': 'diff-h', id: 'version-diff-panel' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'diff-h' }, `Compare v${version} with`),
      h('div', { class: 'row' }, h('div', { class: 'field row' }, h('label', { for: 'compare-version' }, 'Version'), pick),
        h('div', { class: 'field row' }, h('label', { for: 'compare-window' }, 'Window'), win))),
    body);
}
