// Thread explorer: filters live in the query string so a search is a link.
// Every filter is applied by the server, so the count is always the count of
// threads matching all of them; the first page refreshes itself while open.
import { h, add, clear, table, field, select, alertBox } from '../ui.js';
import { gql, api, explain, changedSince } from '../api.js';
import { link, navigate } from '../app.js';
import { exportAllLink } from './ops.js';
import { healthLegend } from './problems.js';
import { healthBadge, statusPill, reasonText, fmtDuration, fmtDateTime, timeTag, tzToggle, soFar } from '../fmt.js';

// Page sizes stay within the query cost limit (50 threads × their fields).
const SIZES = [10, 25, 50];
const FIELDS = `id label contractName contractVersion status startedAt refs error tags durationMs
  health { status firstIssue { stepName message } }`;

const Q_THREADS = `query Threads($status: String, $contractName: String, $contractVersion: Int, $startedAfter: String, $startedBefore: String,
  $health: [ThreadHealthStatus!], $tag: String, $idPrefix: String, $refKey: String, $refValue: String,
  $rule: String, $step: String, $orderBy: ThreadOrderBy, $order: SortOrder, $limit: Int, $offset: Int) {
  threads(status: $status, contractName: $contractName, contractVersion: $contractVersion, startedAfter: $startedAfter, startedBefore: $startedBefore,
    health: $health, tag: $tag, idPrefix: $idPrefix, refKey: $refKey, refValue: $refValue, rule: $rule, step: $step, orderBy: $orderBy, order: $order,
    limit: $limit, offset: $offset) { totalCount totalCountIsExact pageInfo { hasNextPage } threads { ${FIELDS} } } }`;
// The deepest offset the API pages to (deeper pages take cursors; this
// list pages by number, so it stops there).
const MAX_OFFSET = 10000;

const HEALTH = [['FAILED', 'Failed'], ['VIOLATED', 'Violated'], ['WARNING', 'Warnings'], ['OK', 'OK']];
const SORTS = [['new', 'Newest first'], ['old', 'Oldest first'], ['long', 'Longest first'], ['short', 'Shortest first']];
const PRESETS = [['', 'Any time'], ['1h', 'Last hour'], ['24h', 'Last 24 hours'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days'], ['custom', 'Custom range…']];
const PRESET_MS = { '1h': 3600e3, '24h': 86400e3, '7d': 7 * 86400e3, '30d': 30 * 86400e3 };
const POLL_MS = 5000;

// toISO turns a datetime-local value (local time) into an ISO instant.
function toISO(v) { if (!v) return null; const d = new Date(v); return isNaN(d) ? null : d.toISOString(); }

export function refsText(refs, skipLabel) {
  if (!refs) return '';
  let o = refs;
  if (typeof refs === 'string') { try { o = JSON.parse(refs); } catch (_) { return refs; } }
  return Object.entries(o || {}).filter(([k]) => !k.startsWith('linkedThread:') && !(skipLabel && k === 'label')).map(([k, v]) => `${k}=${v}`).join(', ');
}

function readFilters(q) {
  const size = parseInt(q.get('size') || '25', 10);
  return {
    health: (q.get('health') || '').split(',').filter((x) => HEALTH.some(([v]) => v === x)),
    status: q.get('status') || '', contract: q.get('contract') || '', version: /^\d+$/.test(q.get('version') || '') && q.get('contract') ? Number(q.get('version')) : 0, refKey: q.get('refKey') || '', ref: q.get('ref') || '',
    id: q.get('id') || '', tag: q.get('tag') || '', when: q.get('when') || '', from: q.get('from') || '', to: q.get('to') || '',
    rule: q.get('rule') || '', step: q.get('step') || '',
    sort: SORTS.some(([v]) => v === q.get('sort')) ? q.get('sort') : 'new',
    size: SIZES.includes(size) ? size : 25,
    // ?page= counts from 1, as the pager shows it (0 or nothing: the first).
    page: Math.max(1, parseInt(q.get('page') || '1', 10) || 1) - 1,
  };
}

// tooDeep: the page starts past the deepest offset the API accepts.
const tooDeep = (f) => f.page * f.size > MAX_OFFSET;

function variables(f) {
  let after = toISO(f.from); let before = toISO(f.to);
  if (PRESET_MS[f.when]) { after = new Date(Date.now() - PRESET_MS[f.when]).toISOString(); before = null; }
  return {
    status: f.status || null, contractName: f.contract || null, contractVersion: f.version || null, startedAfter: after, startedBefore: before,
    health: f.health.length ? f.health : null, tag: f.tag || null, idPrefix: f.id || null,
    refKey: f.refKey || null, refValue: f.ref || null, rule: f.rule || null, step: f.step || null,
    orderBy: f.sort === 'long' || f.sort === 'short' ? 'DURATION' : 'STARTED_AT',
    order: f.sort === 'old' || f.sort === 'short' ? 'ASC' : 'DESC',
    // A page deeper than the API pages to asks only for the count: the
    // page then says it is past the end (or past what a list pages to).
    limit: tooDeep(f) ? 1 : f.size, offset: tooDeep(f) ? 0 : f.page * f.size,
  };
}

async function contractNames() {
  try { const d = await api.get('/v1/contracts'); return (d.contracts || []).map((c) => c.name); } catch (_) { return []; }
}

export async function renderThreads(ctx) {
  const f = readFilters(ctx.query);
  const names = await contractNames();

  const healthBoxes = HEALTH.map(([v, l]) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', name: 'health', value: v, checked: f.health.includes(v) || null }), ' ', l));
  const status = select('status', [['', 'Any status'], ['active', 'Active'], ['completed', 'Completed'], ['failed', 'Failed'], ['cancelled', 'Cancelled']], f.status);
  const contract = h('input', { type: 'text', name: 'contract', value: f.contract, list: 'contract-names', placeholder: 'pick or type a contract', autocomplete: 'off' });
  const contractList = h('datalist', { id: 'contract-names' }, names.map((n) => h('option', { value: n })));
  const idIn = h('input', { type: 'text', name: 'id', value: f.id, placeholder: 'full id or first characters', class: 'mono', autocomplete: 'off' });
  const refKey = h('input', { type: 'text', name: 'refKey', value: f.refKey, placeholder: 'e.g. orderId' });
  const ref = h('input', { type: 'text', name: 'ref', value: f.ref, placeholder: 'contains…' });
  const tag = h('input', { type: 'text', name: 'tag', value: f.tag, placeholder: 'exact tag' });
  const rule = h('input', { type: 'text', name: 'rule', value: f.rule, placeholder: 'e.g. invalid_transition', autocomplete: 'off' });
  const stepIn = h('input', { type: 'text', name: 'step', value: f.step, placeholder: 'step of the first problem', autocomplete: 'off' });
  const when = select('when', PRESETS, f.when || (f.from || f.to ? 'custom' : ''));
  const from = h('input', { type: 'datetime-local', name: 'from', value: f.from });
  const to = h('input', { type: 'datetime-local', name: 'to', value: f.to });
  const custom = h('div', { class: 'row custom-range', hidden: when.value !== 'custom' || null }, field('Started after', from), field('Started before', to));
  when.addEventListener('change', () => { custom.hidden = when.value !== 'custom'; });
  const sort = select('sort', SORTS, f.sort);
  const size = select('size', SIZES.map((n) => [String(n), n + ' per page']), String(f.size));
  const contractMsg = h('div', { class: 'hint', id: 'contract-msg', role: 'status' });
  if (f.version) {
    const q = new URLSearchParams(ctx.query); q.delete('version'); q.delete('page');
    contractMsg.append(`version ${f.version} only · `, link('threads?' + q.toString(), 'all versions', { id: 'all-versions' }));
  }
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter threads', id: 'thread-filters' },
    h('fieldset', { class: 'health-filter' }, h('legend', {}, 'Health'), healthBoxes,
      h('button', { type: 'button', class: 'btn-sm', id: 'needs-attention', title: 'Failed or violated threads' }, 'Needs attention')),
    field('Status', status), h('div', { class: 'field' }, h('label', { for: 'f-contract' }, 'Contract'), Object.assign(contract, { id: 'f-contract' }), contractList, contractMsg),
    field('Thread id', idIn), field('Ref key', refKey), field('Ref value', ref), field('Tag', tag),
    field('Problem rule', rule), field('Problem step', stepIn),
    field('Started', when), custom, field('Sort', sort), field('Page size', size),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn-primary' }, 'Search'), h('button', { type: 'button', id: 'clear-filters' }, 'Clear')));

  const go = (over) => {
    // The contract is matched case-insensitively against the list, so
    // "ORDER_FLOW" finds order_flow; an unknown name is kept as typed.
    // The first characters of a name that only one contract has pick it too.
    let c = contract.value.trim();
    const lc = c.toLowerCase();
    const starts = names.filter((n) => n.toLowerCase().startsWith(lc));
    const hit = names.find((n) => n.toLowerCase() === lc) || (lc && starts.length === 1 ? starts[0] : null);
    if (hit) c = hit;
    const vals = Object.assign({
      health: [...form.querySelectorAll('input[name=health]:checked')].map((x) => x.value).join(','),
      status: status.value, contract: c, version: c === f.contract && f.version ? String(f.version) : '', id: idIn.value.trim(), refKey: refKey.value.trim(), ref: ref.value.trim(), tag: tag.value.trim(), rule: rule.value.trim(), step: stepIn.value.trim(),
      when: when.value === 'custom' ? '' : when.value, from: when.value === 'custom' ? from.value : '', to: when.value === 'custom' ? to.value : '',
      sort: sort.value === 'new' ? '' : sort.value, size: size.value === '25' ? '' : size.value, page: 0,
    }, over || {});
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(vals)) if (v && k !== 'page') p.set(k, v);
    if (vals.page > 0) p.set('page', String(vals.page + 1));
    const qs = p.toString();
    if ('?' + qs === (location.search || '?')) return; // a change and its Search click
    navigate('threads' + (qs ? '?' + qs : ''));
  };
  form.addEventListener('submit', (e) => { e.preventDefault(); go(); });
  form.querySelector('#clear-filters').addEventListener('click', () => navigate('threads'));
  form.querySelector('#needs-attention').addEventListener('click', () => {
    for (const b of form.querySelectorAll('input[name=health]')) b.checked = b.value === 'FAILED' || b.value === 'VIOLATED';
    go();
  });
  // Every filter applies when it changes (a typed one when it is left or on
  // Enter), so no filter waits for Search while another does not.
  for (const el of form.querySelectorAll('input, select')) {
    el.addEventListener('change', () => { if (el === when && when.value === 'custom') return; go(); });
  }

  const results = h('section', { class: 'panel', 'aria-labelledby': 'threads-h' });
  const live = h('span', { class: 'muted live', id: 'threads-live', role: 'status', 'aria-live': 'polite' });
  const vars = variables(f);
  let last = '';

  const draw = (conn) => {
    clear(results);
    const total = conn.totalCount;
    // Past 10,000 matches the API stops counting (totalCountIsExact false).
    const totalText = conn.totalCountIsExact === false ? `${total.toLocaleString('en')}+` : String(total);
    const pages = Math.max(1, Math.ceil(total / f.size));
    const start = f.page * f.size + 1;
    const end = f.page * f.size + conn.threads.length;
    const cols = [
      { label: 'Thread', class: 'col-thread', render: (t) => h('div', {}, link('threads/' + encodeURIComponent(t.id), t.label || t.id, { class: 'mono', 'data-thread-id': t.id }),
        t.label ? h('div', { class: 'muted mono small', title: t.id }, t.id.slice(0, 8) + '…') : null,
        reasonText(t) && (t.health.status !== 'OK' || t.status === 'failed' || t.status === 'cancelled') ? h('div', { class: 'reason ' + (t.health.status === 'WARNING' || t.status === 'cancelled' ? 'warn' : 'bad') }, reasonText(t)) : null) },
      { label: 'Health', render: (t) => healthBadge(t.health) },
      { label: 'Status', render: (t) => statusPill(t.status) },
      { label: 'Contract', render: (t) => t.contractName ? link('contracts/' + encodeURIComponent(t.contractName) + (t.contractVersion ? '/' + t.contractVersion : ''), t.contractName + (t.contractVersion ? ' v' + t.contractVersion : '')) : h('span', { class: 'muted' }, 'free-form') },
      { label: 'Duration', render: (t) => h('span', { class: 'num', title: t.status === 'active' ? 'so far (from its start to now)' : '' }, fmtDuration(t.status === 'active' ? soFar(t) : t.durationMs), t.status === 'active' ? h('span', { class: 'muted small' }, ' so far') : null) },
      { label: 'Tags · refs', render: (t) => { const r = refsText(t.refs, true); return (t.tags.length || r) ? h('div', { class: 'tags-refs' }, t.tags.length ? h('span', { class: 'tags' }, t.tags.map((x) => h('span', { class: 'tag' }, x))) : null,
        r ? h('div', { class: 'truncate mono small', title: r }, r) : null) : h('span', { class: 'muted' }, '—'); } },
      { label: 'Started', class: 'col-started', render: (t) => timeTag(t.startedAt, { stacked: true }) },
    ];
    const prev = h('button', { type: 'button', id: 'prev-page', disabled: f.page === 0 || null }, '← Previous');
    const next = h('button', { type: 'button', id: 'next-page', disabled: !conn.pageInfo.hasNextPage || (f.page + 1) * f.size > MAX_OFFSET || null }, 'Next →');
    prev.addEventListener('click', () => go({ page: Math.min(f.page - 1, pages - 1) }));
    next.addEventListener('click', () => go({ page: f.page + 1 }));
    const past = total > 0 && f.page > 0 && (conn.threads.length === 0 || tooDeep(f));
    // Past the end of an exact count: offer its last page. Past the
    // 10,000 a list pages to (the count is bounded): say how to reach more.
    const beyond = past && conn.totalCountIsExact === false;
    add(results,
      h('div', { class: 'panel-head' }, h('h2', { id: 'threads-h' }, 'Threads'),
        h('span', { class: 'muted', id: 'threads-count' }, past ? `Page ${f.page + 1} is past the end` : total ? `${start}–${end} of ${totalText}` : '0 threads'), live),
      beyond ? h('div', { class: 'panel-body', id: 'page-past-end' }, alertBox('warn', `The list pages through the first ${MAX_OFFSET.toLocaleString('en')} threads that match.`,
        ' Narrow the filters (a time range, a contract) or reverse the sort to see the others.')) : null,
      past && !beyond ? h('div', { class: 'panel-body', id: 'page-past-end' }, alertBox('warn', `There are only ${pages} page${pages === 1 ? '' : 's'} of ${total} threads.`, ' ',
        link('threads?' + withPage(ctx.query, pages - 1), 'Go to the last page', { id: 'last-page' }))) : null,
      past ? null : table(cols, conn.threads.map((t) => Object.assign(t, { __attrs: { 'data-row': t.id, 'data-health': t.health.status } })), { empty: 'No threads match these filters.', caption: 'Threads' }),
      total > f.size || f.page > 0 ? h('nav', { class: 'pager', 'aria-label': 'Pagination' }, h('span', { class: 'muted' }, conn.totalCountIsExact === false ? `Page ${f.page + 1}` : `Page ${Math.min(f.page + 1, pages)} of ${pages}`), h('div', { class: 'row' }, prev, next)) : null);
  };

  const load = async () => {
    const d = await gql(Q_THREADS, vars);
    return d.threads;
  };
  try {
    const conn = await load();
    last = signature(conn);
    draw(conn);
  } catch (e) {
    add(results, h('h2', { id: 'threads-h' }, 'Threads'), h('div', { class: 'panel-body' }, alertBox('bad', 'Search failed', explain(e))));
  }

  // Live: poll the threads' version (ETag, 304 while nothing changed) and
  // reload the page's query only when it moved, or once a minute under a
  // time preset (threads age out of "last hour" without any change).
  let etag = '';
  let loadedAt = Date.now();
  try { etag = (await changedSince('/v1/threads/version', '')).etag; } catch (_) { /* the first poll retries */ }
  const timer = setInterval(async () => {
    if (!ctx.isCurrent()) { clearInterval(timer); return; }
    if (document.hidden) return;
    try {
      const v = await changedSince('/v1/threads/version', etag);
      const aged = PRESET_MS[f.when] && Date.now() - loadedAt > 60_000;
      if (!v.changed && !aged) return;
      etag = v.etag;
      if (PRESET_MS[f.when]) Object.assign(vars, { startedAfter: new Date(Date.now() - PRESET_MS[f.when]).toISOString() });
      const conn = await load();
      loadedAt = Date.now();
      const sig = signature(conn);
      if (sig !== last && ctx.isCurrent()) {
        const added = conn.totalCount - Number(last.split('|')[0]);
        last = sig;
        draw(conn);
        const at = fmtDateTime(new Date().toISOString());
        live.textContent = added > 0 ? `${added} new thread${added === 1 ? '' : 's'} · updated ${at}` : `updated ${at}`;
        results.querySelector('.panel-head').appendChild(live);
      }
    } catch (_) { /* keep the page as it is; the next poll retries */ }
  }, POLL_MS);

  return h('div', {},
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Threads'), h('p', { class: 'desc' }, 'Executions recorded by SDKs and integrations. The list refreshes itself while open.')),
      tzToggle(() => navigate('threads' + location.search, { replace: true })), exportAllLink(f)),
    // On a phone the filters fold under one line that says how many apply.
    h('section', { class: 'panel' }, h('details', { class: 'filter-box', id: 'filter-box', open: window.innerWidth > 760 || null },
      h('summary', {}, 'Filters', activeCount(f) ? h('span', { class: 'pill info', id: 'filters-active' }, `${activeCount(f)} active`) : null),
      h('div', { class: 'panel-body' }, form,
        h('details', { class: 'legend-box' }, h('summary', {}, 'What Failed, Violated and Needs attention mean'), healthLegend())))),
    results);
}

function activeCount(f) {
  return [f.health.length, f.status, f.contract, f.id, f.refKey, f.ref, f.tag, f.when || f.from || f.to, f.rule, f.step].filter(Boolean).length;
}

function signature(conn) {
  return conn.totalCount + '|' + conn.threads.map((t) => t.id + ':' + t.status + ':' + t.health.status + ':' + t.durationMs).join(',');
}

function withPage(q, page) {
  const p = new URLSearchParams(q);
  if (page > 0) p.set('page', String(page + 1)); else p.delete('page');
  return p.toString();
}
