// Thread explorer: filters live in the query string so a search is a link.
import { h, add, clear, pill, timeEl, table, field, select, alertBox } from '../ui.js';
import { gql, explain } from '../api.js';
import { link, navigate } from '../app.js';

const PAGE = 25;
const FIELDS = 'id label contractName contractVersion status startedAt completedAt refs error';

const Q_THREADS = `query Threads($status: String, $contractName: String, $startedAfter: String, $startedBefore: String, $limit: Int, $offset: Int) {
  threads(status: $status, contractName: $contractName, startedAfter: $startedAfter, startedBefore: $startedBefore, limit: $limit, offset: $offset) {
    totalCount threads { ${FIELDS} } } }`;
const Q_BY_REF = `query ByRef($refKey: String, $refValue: String!, $status: String, $startedAfter: String, $startedBefore: String, $limit: Int, $offset: Int) {
  threadsByRef(refKey: $refKey, refValue: $refValue, status: $status, startedAfter: $startedAfter, startedBefore: $startedBefore, limit: $limit, offset: $offset) {
    totalCount threads { ${FIELDS} } } }`;

// toISO turns a datetime-local value (local time) into an ISO instant.
function toISO(v) { if (!v) return null; const d = new Date(v); return isNaN(d) ? null : d.toISOString(); }

export function refsText(refs, skipLabel) {
  if (!refs) return '';
  let o = refs;
  if (typeof refs === 'string') { try { o = JSON.parse(refs); } catch (_) { return refs; } }
  return Object.entries(o || {}).filter(([k]) => !k.startsWith('linkedThread:') && !(skipLabel && k === 'label')).map(([k, v]) => `${k}=${v}`).join(', ');
}

export async function renderThreads(ctx) {
  const q = ctx.query;
  const f = {
    status: q.get('status') || '', contract: q.get('contract') || '', refKey: q.get('refKey') || '', ref: q.get('ref') || '',
    from: q.get('from') || '', to: q.get('to') || '', page: Math.max(0, parseInt(q.get('page') || '0', 10) || 0),
  };

  const status = select('status', [['', 'Any status'], ['active', 'Active'], ['completed', 'Completed'], ['failed', 'Failed'], ['cancelled', 'Cancelled']], f.status);
  const contract = h('input', { type: 'text', name: 'contract', value: f.contract, placeholder: 'e.g. order-fulfilment' });
  const refKey = h('input', { type: 'text', name: 'refKey', value: f.refKey, placeholder: 'e.g. orderId' });
  const ref = h('input', { type: 'text', name: 'ref', value: f.ref, placeholder: 'contains…' });
  const from = h('input', { type: 'datetime-local', name: 'from', value: f.from });
  const to = h('input', { type: 'datetime-local', name: 'to', value: f.to });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter threads', id: 'thread-filters' },
    field('Status', status), field('Contract', contract), field('Ref key', refKey), field('Ref value', ref),
    field('Started after', from), field('Started before', to),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn-primary' }, 'Search'), h('button', { type: 'button', id: 'clear-filters' }, 'Clear')));

  const go = (over) => {
    const p = new URLSearchParams();
    const vals = Object.assign({ status: status.value, contract: contract.value.trim(), refKey: refKey.value.trim(), ref: ref.value.trim(), from: from.value, to: to.value, page: 0 }, over || {});
    for (const [k, v] of Object.entries(vals)) if (v && !(k === 'page' && v === 0)) p.set(k, v);
    const qs = p.toString();
    navigate('threads' + (qs ? '?' + qs : ''));
  };
  form.addEventListener('submit', (e) => { e.preventDefault(); go(); });
  form.querySelector('#clear-filters').addEventListener('click', () => navigate('threads'));

  const results = h('section', { class: 'panel', 'aria-labelledby': 'threads-h', 'aria-live': 'polite' });
  const vars = { status: f.status || null, startedAfter: toISO(f.from), startedBefore: toISO(f.to), limit: PAGE, offset: f.page * PAGE };
  let conn;
  try {
    if (f.ref) {
      const d = await gql(Q_BY_REF, Object.assign(vars, { refKey: f.refKey || null, refValue: f.ref }));
      conn = d.threadsByRef;
      if (f.contract) conn = { threads: conn.threads.filter((t) => t.contractName === f.contract), totalCount: conn.totalCount, filteredLocally: true };
    } else {
      const d = await gql(Q_THREADS, Object.assign(vars, { contractName: f.contract || null }));
      conn = d.threads;
    }
  } catch (e) {
    add(results, h('h2', { id: 'threads-h' }, 'Threads'), h('div', { class: 'panel-body' }, alertBox('bad', 'Search failed', explain(e))));
    conn = null;
  }
  if (conn) {
    const total = conn.totalCount;
    const start = total ? f.page * PAGE + 1 : 0;
    const end = f.page * PAGE + conn.threads.length;
    const cols = [
      { label: 'Thread', class: 'col-thread', render: (t) => h('div', {}, link('threads/' + encodeURIComponent(t.id), t.label || t.id, { class: 'mono', 'data-thread-id': t.id }),
        t.label ? h('div', { class: 'muted mono' }, t.id) : null) },
      { label: 'Contract', render: (t) => t.contractName ? h('span', {}, t.contractName, t.contractVersion ? h('span', { class: 'muted' }, ' v' + t.contractVersion) : null) : h('span', { class: 'muted' }, 'free-form') },
      { label: 'Status', render: (t) => pill(t.status) },
      { label: 'Refs', render: (t) => { const r = refsText(t.refs, true); return r ? h('span', { class: 'truncate mono', title: r }, r) : h('span', { class: 'muted' }, '—'); } },
      { label: 'Started', render: (t) => timeEl(t.startedAt) },
      { label: 'Completed', render: (t) => timeEl(t.completedAt) },
    ];
    const prev = h('button', { type: 'button', id: 'prev-page', disabled: f.page === 0 || null }, '← Previous');
    const next = h('button', { type: 'button', id: 'next-page', disabled: end >= total || null }, 'Next →');
    prev.addEventListener('click', () => go(Object.assign({}, f, { page: f.page - 1, status: f.status })));
    next.addEventListener('click', () => go(Object.assign({}, f, { page: f.page + 1, status: f.status })));
    add(results, 
      h('div', { class: 'panel-head' }, h('h2', { id: 'threads-h' }, 'Threads'), h('span', { class: 'muted', id: 'threads-count' }, total ? `${start}–${end} of ${total}` : '0 threads')),
      conn.filteredLocally ? h('div', { class: 'panel-body' }, alertBox('info', null, 'The contract filter is applied to this page of ref matches only.')) : null,
      table(cols, conn.threads, { empty: 'No threads match these filters.', caption: 'Threads' }),
      total > PAGE || f.page > 0 ? h('nav', { class: 'pager', 'aria-label': 'Pagination' }, h('span', { class: 'muted' }, `Page ${f.page + 1} of ${Math.max(1, Math.ceil(total / PAGE))}`), h('div', { class: 'row' }, prev, next)) : null);
  }
  return h('div', {},
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Threads'), h('p', { class: 'desc' }, 'Executions recorded by SDKs and integrations, newest first.'))),
    h('section', { class: 'panel' }, h('div', { class: 'panel-body' }, form)),
    results);
}
