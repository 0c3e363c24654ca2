// Operator tools: thread export and deletion buttons, the export download on
// the thread list, the retention setting and the Audit page. Kept in one
// module so the pages that show them only call in.
import { h, add, clear, alertBox, field, select, table, timeEl, toast, confirmDialog, json, pill } from '../ui.js';
import { api, explain, getApiBase, pageApiBase } from '../api.js';
import { state, navigate } from '../app.js';

const isAdmin = () => !!state.me && state.me.role === 'admin' && state.me.kind !== 'service_account';

// threadActions: "Download JSON" for every reader, "Delete thread" (with a
// confirmation naming the thread) for administrators.
export function threadActions(t) {
  const dl = h('a', { class: 'btn btn-sm', id: 'export-thread', href: getApiBase() + '/v1/threads/' + encodeURIComponent(t.id) + '/export',
    download: 'thread-' + t.id + '.json' }, 'Download JSON');
  const bar = h('div', { class: 'row', id: 'thread-actions' }, dl);
  if (isAdmin()) {
    const del = h('button', { type: 'button', class: 'btn-sm btn-danger', id: 'delete-thread' }, 'Delete thread');
    del.addEventListener('click', async () => {
      const ok = await confirmDialog({ title: 'Delete this thread?',
        message: `Thread ${t.label || t.id} and every step, attempt, sub-step, validation result and notification it holds will be deleted for good. The audit log keeps only that it was deleted.`,
        confirmLabel: 'Delete thread', danger: true });
      if (!ok) return;
      try {
        await api.del('/v1/threads/' + encodeURIComponent(t.id));
        toast('Thread deleted');
        navigate('threads');
      } catch (err) {
        bar.appendChild(alertBox('bad', 'Could not delete the thread', explain(err)));
      }
    });
    bar.appendChild(del);
  }
  return bar;
}

// exportQuery is the export request for exactly the thread list's filters
// (GET /v1/threads/export takes every one of them).
export function exportQuery({ status, contract, version, health, tag, id, refKey, ref, when, from, to, rule, step }) {
  const p = new URLSearchParams();
  if (status) p.set('status', status);
  if (contract) p.set('contract', contract);
  if (contract && version) p.set('contractVersion', String(version));
  if (health && health.length) p.set('health', health.join(','));
  if (tag) p.set('tag', tag);
  if (id) p.set('idPrefix', id);
  if (refKey) p.set('refKey', refKey);
  if (ref) p.set('refValue', ref);
  if (rule) p.set('rule', rule);
  if (step) p.set('step', step);
  if (when && when !== 'custom') p.set('within', when);
  else {
    const iso = (v) => { const d = v ? new Date(v) : null; return d && !isNaN(d) ? d.toISOString() : ''; };
    if (iso(from)) p.set('started_since', iso(from));
    if (iso(to)) p.set('started_before', iso(to));
  }
  return p.toString();
}

// exportAllLink downloads every thread matching the list's filters as NDJSON.
export function exportAllLink(f) {
  const qs = exportQuery(f);
  return h('a', { class: 'btn btn-sm', id: 'export-threads', href: getApiBase() + '/v1/threads/export' + (qs ? '?' + qs : ''),
    download: 'threads.ndjson', title: 'Every thread matching these filters, one JSON document per line' }, 'Export NDJSON');
}

// retentionPanel: Settings → Engine → Data retention (administrators).
export function retentionPanel() {
  const body = h('div', { class: 'panel-body', id: 'retention' });
  const sec = h('section', { class: 'panel', 'aria-labelledby': 'ret-h' }, h('h2', { id: 'ret-h' }, 'Data retention'), body);
  if (!isAdmin()) {
    body.appendChild(h('p', { class: 'muted' }, 'Only administrators can see and change how long threads are kept.'));
    return sec;
  }
  const msg = h('div', { 'aria-live': 'polite' });
  const draw = (v) => {
    clear(body);
    const input = h('input', { type: 'number', min: '0', max: '36500', step: '1', id: 'retention-days', name: 'threads_days',
      value: String(v.threads_days) });
    const save = h('button', { type: 'submit', class: 'btn-primary', id: 'save-retention' }, 'Save');
    const reset = h('button', { type: 'button', id: 'reset-retention', disabled: v.source !== 'ui' || null }, 'Use config default');
    const form = h('form', { novalidate: true },
      field('Keep ended threads for (days)', input, `0 keeps them forever. Threads that ended longer ago are deleted with all their data by the periodic sweep (retention.sweep_interval). Config default (retention.threads_days): ${v.config_threads_days}. Currently ${v.source === 'ui' ? 'set here' : 'from the config'}.`),
      h('p', { class: 'muted' }, v.active_idle_days > 0 ? `Active threads idle for more than ${v.active_idle_days} days are deleted too (retention.active_idle_days).` : 'Active threads are never deleted (retention.active_idle_days is 0).'),
      h('div', { class: 'row' }, save, reset));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clear(msg);
      const n = Number(input.value);
      if (!Number.isInteger(n) || n < 0) { msg.appendChild(alertBox('bad', null, 'Enter a whole number of days (0 keeps threads forever).')); input.focus(); return; }
      if (n > 0) {
        const ok = await confirmDialog({ title: 'Delete old threads?', message: `Threads that ended more than ${n} days ago will be deleted for good at the next sweep.`, confirmLabel: 'Save', danger: true });
        if (!ok) return;
      }
      try {
        draw(await api.put('/v1/engine/retention', { threads_days: n }, { base: pageApiBase() }));
        msg.appendChild(alertBox('ok', null, 'Retention saved. It applies from the next sweep.'));
      } catch (err) { msg.appendChild(alertBox('bad', 'Could not save retention', explain(err))); }
    });
    reset.addEventListener('click', async () => {
      clear(msg);
      try { draw(await api.del('/v1/engine/retention', { base: pageApiBase() })); msg.appendChild(alertBox('ok', null, 'The config value applies again.')); }
      catch (err) { msg.appendChild(alertBox('bad', 'Could not remove the override', explain(err))); }
    });
    add(body, form, msg);
  };
  api.get('/v1/engine/retention', { base: pageApiBase() }).then(draw, (err) => body.appendChild(alertBox('bad', 'Could not load retention', explain(err))));
  return sec;
}

// renderAudit: the audit log, newest first, filtered, a page at a time.
export async function renderAudit(ctx) {
  const q = ctx.query;
  const action = h('input', { type: 'text', name: 'action', value: q.get('action') || '', placeholder: 'e.g. thread.delete or contract.' });
  const actor = h('input', { type: 'text', name: 'actor_id', value: q.get('actor') || q.get('actor_id') || '', placeholder: 'email, or user or service account id' });
  const target = h('input', { type: 'text', name: 'target', value: q.get('target') || '', placeholder: 'id or name:version' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter the audit log', id: 'audit-filters' },
    field('Action', action), field('Actor', actor), field('Target', target),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'btn-primary' }, 'Search')));
  const formMsg = h('div', { 'aria-live': 'polite', id: 'audit-msg' });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(formMsg);
    const p = new URLSearchParams();
    for (const [k, el] of [['action', action], ['target', target]]) if (el.value.trim()) p.set(k, el.value.trim());
    // An email names a user: the log is filtered by that user's id.
    const who = actor.value.trim();
    if (who.includes('@')) {
      try {
        const d = await api.get('/v1/users');
        const u = ((d && d.users) || []).find((x) => (x.email || '').toLowerCase() === who.toLowerCase());
        if (!u) { formMsg.appendChild(alertBox('warn', null, `No user has the email ${who}.`)); return; }
        p.set('actor_id', u.id); p.set('actor', who);
      } catch (err) { formMsg.appendChild(alertBox('bad', 'Could not look the email up', explain(err))); return; }
    } else if (who) p.set('actor_id', who);
    navigate('audit' + (p.toString() ? '?' + p : ''));
  });
  const list = h('div', { id: 'audit-list' });
  const more = h('button', { type: 'button', id: 'audit-more', hidden: true }, 'Load more');
  const rows = [];
  let cursor = '';
  const cols = [
    { label: 'When', render: (r) => timeEl(r.at) },
    { label: 'Action', render: (r) => h('code', {}, r.action) },
    { label: 'Actor', render: (r) => h('span', { title: r.actor_id }, pill(r.actor_kind, 'neutral'), ' ',
      r.actor_name ? h('span', {}, r.actor_name) : h('code', {}, r.actor_id)) },
    { label: 'Target', render: (r) => h('code', { class: 'truncate', title: r.target }, r.target) },
    { label: 'Details', render: (r) => Object.keys(r.details || {}).length ? json(r.details) : h('span', { class: 'muted' }, '—') },
  ];
  async function load() {
    const p = new URLSearchParams();
    for (const k of ['action', 'actor_id', 'target']) if (q.get(k)) p.set(k, q.get(k));
    p.set('limit', '50');
    if (cursor) p.set('cursor', cursor);
    const page = await api.get('/v1/audit?' + p);
    rows.push(...page.entries);
    cursor = page.next_cursor || '';
    clear(list).appendChild(table(cols, rows, { empty: 'No audit entries match.', caption: 'Audit log, newest first' }));
    more.hidden = !cursor;
  }
  more.addEventListener('click', async () => { more.disabled = true; try { await load(); } catch (err) { list.appendChild(alertBox('bad', null, explain(err))); } finally { more.disabled = false; } });
  await load();
  return h('div', {},
    h('div', { class: 'crumbs' }, 'Administration / Audit log'),
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Audit log'),
      h('p', { class: 'desc' }, 'Every administrative action: who did what to what, newest first. Actions ending in "." match a prefix.'))),
    form, formMsg, list, h('div', { class: 'row' }, more));
}
