// Administration → Webhooks: alert webhooks (create, edit, enable, delete,
// rotate the secret, send test) and each webhook's delivery log.
import { h, add, clear, alertBox, field, select, table, timeEl, toast, confirmDialog, dialog, pill, copyButton } from '../ui.js';
import { api, explain } from '../api.js';
import { navigate, link } from '../app.js';

const EVENTS = [
  ['step.failed', 'Step failed'],
  ['validation.violated', 'Validation violated (at least the minimum severity)'],
  ['thread.failed', 'Thread failed'],
  ['thread.overdue', "Thread past its contract's max_duration"],
  ['thread.silent', 'Thread silent (no update for alerts.silent_after)'],
];
const SEVERITIES = ['critical', 'major', 'minor', 'warning', 'info'];

// secretDialog shows a secret once, with a copy button.
function secretDialog(title, secret) {
  dialog({ title, body: h('div', {},
    h('p', {}, 'Copy the signing secret now: it is not shown again. Receivers verify the webhook-signature header with it (Standard Webhooks).'),
    h('div', { class: 'row' }, h('code', { id: 'webhook-secret', class: 'mono' }, secret), copyButton(secret, 'Copy the webhook secret'))),
  buttons: [{ label: 'Done', class: 'btn-primary' }] });
}

// webhookForm edits w (or a new webhook when w is null); onSaved gets the answer.
function webhookForm(w, onSaved) {
  const msg = h('div', { 'aria-live': 'polite' });
  const name = h('input', { type: 'text', id: 'webhook-name', name: 'name', value: w ? w.name : '', required: true, maxlength: '200' });
  const url = h('input', { type: 'url', id: 'webhook-url', name: 'url', value: w ? w.url : '', required: true, spellcheck: 'false',
    placeholder: 'https://hooks.example.com/threadengine' });
  const format = select('format', [['standard', 'Standard Webhooks JSON'], ['slack', 'Slack-compatible {"text": …}']], w ? w.format : 'standard');
  format.id = 'webhook-format';
  const min = select('min_severity', SEVERITIES.map((s) => [s, s]), w ? w.min_severity : 'major');
  min.id = 'webhook-min-severity';
  const have = new Set(w ? w.events : ['step.failed', 'validation.violated', 'thread.failed', 'thread.overdue']);
  const boxes = EVENTS.map(([v, label]) => {
    const cb = h('input', { type: 'checkbox', name: 'events', value: v, id: 'ev-' + v.replace('.', '-') });
    cb.checked = have.has(v);
    return h('label', { class: 'row', for: cb.id, style: 'gap:.4rem;font-weight:400' }, cb, label);
  });
  const enabled = h('input', { type: 'checkbox', id: 'webhook-enabled', name: 'enabled' });
  enabled.checked = w ? w.enabled : true;
  const save = h('button', { type: 'submit', class: 'btn-primary', id: 'save-webhook' }, w ? 'Save' : 'Create webhook');
  const form = h('form', { id: 'webhook-form', novalidate: true },
    field('Name', name), field('URL', url, 'http or https; the engine posts signed JSON here. Redirects are not followed.'),
    h('fieldset', { class: 'field' }, h('legend', {}, 'Events'), ...boxes),
    field('Minimum severity', min, 'validation.violated is sent only for issues at least this severe.'),
    field('Format', format),
    h('label', { class: 'row', for: 'webhook-enabled', style: 'gap:.4rem' }, enabled, 'Enabled'),
    h('div', { class: 'row' }, save), msg);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(msg);
    const body = { name: name.value.trim(), url: url.value.trim(), format: format.value, min_severity: min.value,
      enabled: enabled.checked, events: boxes.map((b) => b.querySelector('input')).filter((c) => c.checked).map((c) => c.value) };
    if (!body.name || !body.url) { msg.appendChild(alertBox('bad', null, 'Enter a name and a URL.')); return; }
    save.disabled = true;
    try {
      const r = w ? await api.patch('/v1/webhooks/' + encodeURIComponent(w.id), body) : await api.post('/v1/webhooks', body);
      onSaved(r);
    } catch (err) {
      msg.appendChild(alertBox('bad', w ? 'Could not save the webhook' : 'Could not create the webhook', explain(err)));
    } finally { save.disabled = false; }
  });
  return form;
}

const stateTone = { delivered: 'ok', pending: 'warn', failed: 'bad' };

// renderWebhooks: the list, and a form to add one.
export async function renderWebhooks() {
  const list = h('div', { id: 'webhook-list', style: 'margin-bottom:1.25rem' });
  const panelBody = h('div', { class: 'panel-body' });
  async function load() {
    const r = await api.get('/v1/webhooks');
    clear(list).appendChild(table([
      { label: 'Name', render: (w) => link('webhooks/' + encodeURIComponent(w.id), w.name) },
      { label: 'URL', render: (w) => h('code', { class: 'truncate', title: w.url }, w.url) },
      { label: 'Events', render: (w) => w.events.length ? w.events.map((e) => h('code', { style: 'margin-right:.3rem' }, e)) : h('span', { class: 'muted' }, 'test only') },
      { label: 'Format', render: (w) => w.format },
      { label: 'State', render: (w) => pill(w.enabled ? 'enabled' : 'disabled', w.enabled ? 'ok' : 'neutral') },
    ], r.webhooks, { empty: 'No webhooks yet. Add one below to be alerted when steps fail, validations are violated or threads get stuck.', caption: 'Webhooks' }));
  }
  add(panelBody, webhookForm(null, async (w) => {
    secretDialog('Webhook created', w.secret);
    toast('Webhook created');
    navigate('webhooks/' + encodeURIComponent(w.id));
  }));
  await load();
  return h('div', {},
    h('div', { class: 'crumbs' }, 'Administration / Webhooks'),
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Webhooks'),
      h('p', { class: 'desc' }, 'Alerts posted to your endpoints, signed per Standard Webhooks, retried with backoff.'))),
    list,
    h('section', { class: 'panel', 'aria-labelledby': 'wh-new-h' }, h('h2', { id: 'wh-new-h' }, 'Add a webhook'), panelBody));
}

// renderWebhook: one webhook, its actions and its delivery log.
export async function renderWebhook(ctx) {
  const id = ctx.params[0];
  const head = h('div', {});
  const editBody = h('div', { class: 'panel-body' });
  const log = h('div', { id: 'delivery-log' });
  const msg = h('div', { 'aria-live': 'polite', id: 'webhook-msg' });
  let w = await api.get('/v1/webhooks/' + encodeURIComponent(id));

  async function loadLog() {
    const r = await api.get('/v1/webhooks/' + encodeURIComponent(id) + '/deliveries?limit=50');
    clear(log).appendChild(table([
      { label: 'Created', render: (d) => timeEl(d.created_at) },
      { label: 'Event', render: (d) => h('code', {}, d.event) },
      { label: 'Thread', render: (d) => d.thread_id ? link('threads/' + encodeURIComponent(d.thread_id), d.thread_id.slice(0, 8), { class: 'mono' }) : h('span', { class: 'muted' }, '—') },
      { label: 'State', render: (d) => pill(d.state, stateTone[d.state] || 'neutral') },
      { label: 'Attempts', render: (d) => String(d.attempts) },
      { label: 'Status', render: (d) => d.last_status ? String(d.last_status) : h('span', { class: 'muted' }, '—') },
      { label: 'Latency', render: (d) => d.last_attempt_at ? d.last_latency_ms + ' ms' : h('span', { class: 'muted' }, '—') },
      { label: 'Error / next attempt', render: (d) => d.last_error ? h('span', { class: 'truncate', title: d.last_error }, d.last_error)
        : d.next_attempt_at && d.state === 'pending' ? h('span', { class: 'muted' }, 'next ', timeEl(d.next_attempt_at)) : h('span', { class: 'muted' }, '—') },
    ], r.deliveries, { empty: 'No deliveries yet. Press "Send test" to try the endpoint.', caption: 'Latest deliveries, newest first' }));
  }

  function drawHead() {
    clear(head);
    const test = h('button', { type: 'button', class: 'btn-primary', id: 'send-test' }, 'Send test');
    test.addEventListener('click', async () => {
      clear(msg);
      test.disabled = true;
      try {
        await api.post('/v1/webhooks/' + encodeURIComponent(id) + '/test', {});
        toast('Test queued');
        // Poll the log until the test is settled (or a few seconds pass).
        for (let i = 0; i < 20; i++) {
          await loadLog();
          if (!log.querySelector('td') || !/pending/.test(log.querySelector('tbody tr').textContent)) break;
          await new Promise((r) => setTimeout(r, 500));
        }
      } catch (err) { msg.appendChild(alertBox('bad', 'Could not send a test', explain(err))); }
      finally { test.disabled = false; }
    });
    const rotate = h('button', { type: 'button', id: 'rotate-secret' }, 'Rotate secret');
    rotate.addEventListener('click', async () => {
      const ok = await confirmDialog({ title: 'Rotate the signing secret?', message: 'The current secret stops signing at once; receivers must be given the new one.', confirmLabel: 'Rotate', danger: true });
      if (!ok) return;
      try { const r = await api.post('/v1/webhooks/' + encodeURIComponent(id) + '/rotate-secret', {}); secretDialog('New signing secret', r.secret); w = r; drawHead(); }
      catch (err) { msg.appendChild(alertBox('bad', 'Could not rotate the secret', explain(err))); }
    });
    const del = h('button', { type: 'button', class: 'btn-danger', id: 'delete-webhook' }, 'Delete');
    del.addEventListener('click', async () => {
      const ok = await confirmDialog({ title: 'Delete this webhook?', message: `Webhook ${w.name} and its delivery log will be deleted; pending deliveries are dropped.`, confirmLabel: 'Delete webhook', danger: true });
      if (!ok) return;
      try { await api.del('/v1/webhooks/' + encodeURIComponent(id)); toast('Webhook deleted'); navigate('webhooks'); }
      catch (err) { msg.appendChild(alertBox('bad', 'Could not delete the webhook', explain(err))); }
    });
    add(head,
      h('div', { class: 'cards' },
        h('div', { class: 'card' }, h('div', { class: 'k' }, 'URL'), h('div', { class: 'v mono truncate', title: w.url }, w.url)),
        h('div', { class: 'card' }, h('div', { class: 'k' }, 'State'), h('div', { class: 'v' }, pill(w.enabled ? 'enabled' : 'disabled', w.enabled ? 'ok' : 'neutral'))),
        h('div', { class: 'card' }, h('div', { class: 'k' }, 'Secret'), h('div', { class: 'v mono' }, 'whsec_' + w.secret_hint))),
      h('div', { class: 'row', id: 'webhook-actions', style: 'margin:1rem 0 1.25rem' }, test, rotate, del));
    clear(editBody).appendChild(webhookForm(w, (r) => { w = r; toast('Webhook saved'); drawHead(); }));
  }

  drawHead();
  await loadLog();
  const refresh = h('button', { type: 'button', class: 'btn-sm', id: 'refresh-log' }, 'Refresh');
  refresh.addEventListener('click', () => loadLog().catch((err) => msg.appendChild(alertBox('bad', null, explain(err)))));
  return h('div', {},
    h('div', { class: 'crumbs' }, link('webhooks', 'Webhooks'), ' / ', w.name),
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, w.name), h('p', { class: 'desc' }, 'Events: ' + (w.events.join(', ') || 'test only') + ' · minimum severity ' + w.min_severity + ' · format ' + w.format))),
    head, msg,
    h('section', { class: 'panel', 'aria-labelledby': 'wh-log-h' }, h('h2', { id: 'wh-log-h' }, 'Delivery log'), h('div', { class: 'panel-body' }, h('div', { class: 'row' }, refresh), log)),
    h('section', { class: 'panel', 'aria-labelledby': 'wh-edit-h' }, h('h2', { id: 'wh-edit-h' }, 'Edit'), editBody));
}
