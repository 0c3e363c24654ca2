// API keys: create personal or service-account keys (the secret is shown
// once), list them by prefix, revoke.
import { h, clear, pill, timeEl, table, confirmDialog, field, select, alertBox, copyButton, toast } from '../ui.js';
import { api, explain } from '../api.js';

function keyStatus(k) {
  if (k.revoked_at) return 'revoked';
  if (k.expires_at && new Date(k.expires_at) <= new Date()) return 'expired';
  return 'active';
}

export async function renderKeys(ctx) {
  const me = ctx.state.me;
  const isAdmin = me.role === 'admin' && me.kind !== 'service_account';
  const msg = h('div', { id: 'keys-msg', 'aria-live': 'polite' });
  const listBox = h('div', {});
  let keys = [];
  let showRevoked = false;

  // Admins see every key; name the owners of personal keys by email.
  const emails = new Map();
  async function loadOwners() {
    if (!isAdmin) return;
    try {
      const d = await api.get('/v1/users');
      for (const u of (d && d.users) || []) emails.set(u.id, u.email);
    } catch (_) { /* owners stay unnamed; the key list still works */ }
  }

  async function load() {
    const d = await api.get('/v1/api-keys');
    keys = (d && (d.api_keys || d.keys)) || [];
    for (const k of keys) if (!k.user_email && k.user_id) k.user_email = emails.get(k.user_id) || (k.user_id === me.id ? me.email : '');
    draw();
  }

  function draw() {
    clear(listBox);
    const visible = keys.filter((k) => showRevoked || !k.revoked_at);
    const revokedCount = keys.length - keys.filter((k) => !k.revoked_at).length;
    const toggle = h('label', { class: 'row', style: 'font-weight:500;margin:0' },
      h('input', { type: 'checkbox', id: 'show-revoked', checked: showRevoked || null }), `Show revoked (${revokedCount})`);
    toggle.querySelector('input').addEventListener('change', (e) => { showRevoked = e.target.checked; draw(); });
    const cols = [
      { label: 'Name', render: (k) => h('span', { style: 'font-weight:600' }, k.name) },
      { label: 'Prefix', render: (k) => h('code', {}, (k.key_prefix || '') + '…') },
      { label: 'Owner', render: (k) => k.service_account_id
        ? h('span', {}, pill('service account', 'info'), ' ', h('span', { class: 'muted' }, (k.service_account && k.service_account.name) || ''),
          k.service_account ? [' ', h('span', { class: 'scope', 'data-scope': k.service_account.scope,
            title: k.service_account.scope === 'party' ? 'Reads only the threads it is a party of' : 'Reads every thread' },
          pill(k.service_account.scope === 'party' ? 'own threads' : 'all threads', 'plain'))] : null)
        : h('span', {}, pill('personal', 'plain'), ' ', h('span', { class: 'muted' }, k.user_email || '')) },
      { label: 'Created', render: (k) => timeEl(k.created_at) },
      { label: 'Last used', render: (k) => k.last_used_at ? timeEl(k.last_used_at) : h('span', { class: 'muted' }, 'never') },
      { label: 'Expires', render: (k) => k.expires_at ? timeEl(k.expires_at) : h('span', { class: 'muted' }, 'never') },
      { label: 'Status', render: (k) => pill(keyStatus(k)) },
      { label: 'Actions', class: 'actions', render: (k) => {
        if (k.revoked_at) return h('span', { class: 'muted' }, '—');
        const b = h('button', { type: 'button', class: 'btn-sm btn-danger', 'aria-label': `Revoke key ${k.name}` }, 'Revoke');
        b.addEventListener('click', () => revoke(k));
        return b;
      } },
    ];
    const rows = visible.map((k) => Object.assign({ __attrs: { 'data-key-name': k.name, 'data-key-status': keyStatus(k) } }, k));
    listBox.appendChild(h('section', { class: 'panel', 'aria-labelledby': 'keys-h' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'keys-h' }, isAdmin ? 'All keys' : 'Your keys'), toggle),
      table(cols, rows, { empty: 'No API keys yet. Create one above for the SDK, OpenTelemetry exporters or scripts.', caption: 'API keys' })));
  }

  async function revoke(k) {
    const ok = await confirmDialog({ title: 'Revoke API key?', message: `"${k.name}" (${k.key_prefix}…) stops working immediately, and browser sessions signed in with it end. This cannot be undone.`, confirmLabel: 'Revoke key', danger: true });
    if (!ok) return;
    try {
      await api.del('/v1/api-keys/' + encodeURIComponent(k.id));
      clear(msg).appendChild(alertBox('ok', null, `Key "${k.name}" was revoked.`));
      toast('Key revoked');
      await load();
    } catch (e) {
      clear(msg).appendChild(alertBox('bad', 'Could not revoke the key', explain(e)));
    }
  }

  // Create form.
  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: '100', placeholder: 'e.g. billing-service production' });
  const days = h('input', { type: 'number', name: 'expires_in_days', min: '1', max: '3650', placeholder: 'never' });
  const kindPersonal = h('input', { type: 'radio', name: 'kind', value: 'personal', checked: true });
  const kindService = h('input', { type: 'radio', name: 'kind', value: 'service' });
  const saName = h('input', { type: 'text', name: 'sa_name', maxlength: '100', placeholder: 'defaults to the key name' });
  const saRole = select('sa_role', [['member', 'member (read + write threads)'], ['viewer', 'viewer (read only)'], ['admin', 'admin']], 'member');
  const saScope = select('sa_scope', [['company', 'all threads (company-wide)'], ['party', 'only threads it is a party of']], 'company');
  const saBox = h('div', { class: 'form-grid', hidden: true }, field('Service account name', saName), field('Service account role', saRole, 'Give integrations only the permissions they need.'),
    field('Reads', saScope, 'Party: the account sees only threads it started or joined, in GraphQL, MCP and this UI. Fixed at creation.'));
  const syncKind = () => { saBox.hidden = !kindService.checked; };
  kindPersonal.addEventListener('change', syncKind); kindService.addEventListener('change', syncKind);
  const formErr = h('div', { 'aria-live': 'assertive' });
  const createBtn = h('button', { type: 'submit', class: 'btn-primary', id: 'create-key' }, 'Create key');
  const form = h('form', { id: 'key-form', novalidate: true }, formErr,
    h('div', { class: 'form-grid' },
      field('Name', name),
      field('Expires in (days)', days, 'Leave empty for a key that does not expire.')),
    isAdmin ? h('fieldset', { class: 'field', style: 'border:0;padding:0;margin:0 0 14px' },
      h('legend', { style: 'font-weight:600;font-size:13px;margin-bottom:6px' }, 'Key type'),
      h('div', { class: 'radio-row' },
        h('label', {}, kindPersonal, 'Personal (acts as you)'),
        h('label', {}, kindService, 'Service account (for an integration)'))) : null,
    isAdmin ? saBox : null,
    createBtn);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clear(formErr);
    if (!name.value.trim()) {
      name.setAttribute('aria-invalid', 'true');
      formErr.appendChild(alertBox('bad', null, 'Give the key a name.'));
      name.focus();
      return;
    }
    name.removeAttribute('aria-invalid');
    const body = { name: name.value.trim() };
    if (days.value) body.expires_in_days = parseInt(days.value, 10);
    if (isAdmin && kindService.checked) body.create_service_account = { name: saName.value.trim() || name.value.trim(), role: saRole.value, scope: saScope.value };
    createBtn.disabled = true;
    try {
      const res = await api.post('/v1/api-keys', body);
      const secret = res.key;
      clear(msg).appendChild(alertBox('warn', 'Copy this key now: it is shown only once.',
        'Store it in your secret manager. The engine keeps only a hash and cannot show it again.',
        h('div', { class: 'secret-box' }, h('code', { id: 'new-key-secret' }, secret), copyButton(secret, 'Copy API key'))));
      form.reset(); syncKind();
      await load();
      msg.querySelector('button').focus();
    } catch (err) {
      formErr.appendChild(alertBox('bad', 'Could not create the key', explain(err)));
    } finally { createBtn.disabled = false; }
  });

  await loadOwners();
  await load();
  return h('div', {},
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'API keys'),
      h('p', { class: 'desc' }, 'Keys authenticate the SDK (engineUrl + apiKey), OpenTelemetry exporters and GraphQL clients with Authorization: Bearer.'))),
    msg,
    h('section', { class: 'panel', 'aria-labelledby': 'newkey-h' }, h('h2', { id: 'newkey-h' }, 'Create a key'), h('div', { class: 'panel-body' }, form)),
    listBox);
}
