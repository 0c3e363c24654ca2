// Users: list with role and status; admins invite, change roles, suspend,
// reactivate and archive.
import { h, add, clear, pill, timeEl, table, dialog, confirmDialog, field, select, alertBox, copyButton, toast } from '../ui.js';
import { api, explain } from '../api.js';

const ROLES = [['admin', 'Admin'], ['member', 'Member'], ['viewer', 'Viewer']];

export async function renderUsers(ctx) {
  const root = h('div', {});
  const msg = h('div', { id: 'users-msg', 'aria-live': 'polite' });
  const listBox = h('div', {});
  let data;

  const inviteBtn = h('button', { type: 'button', class: 'btn-primary', id: 'invite-user' }, '+ Invite user');
  inviteBtn.addEventListener('click', () => openInvite());

  function show(node) { clear(msg); if (node) msg.appendChild(node); }
  function showError(title, err) { show(alertBox('bad', title, explain(err))); }

  async function load() {
    data = await api.get('/v1/users');
    draw();
  }

  function roleOf(u) { return u.role || (Array.isArray(u.roles) ? u.roles[0] : '') || ''; }

  function draw() {
    clear(listBox);
    inviteBtn.hidden = !data.can_manage;
    const users = data.users || [];
    const cols = [
      { label: 'Name', render: (u) => h('div', {}, h('div', { style: 'font-weight:600' }, u.full_name || '—', u.id === ctx.state.me.id ? h('span', { class: 'muted', style: 'font-weight:400' }, ' (you)') : null), h('div', { class: 'muted mono' }, u.email)) },
      { label: 'Role', render: (u) => data.can_manage && u.status !== 'archived' ? roleSelect(u) : pill(roleOf(u), 'neutral') },
      { label: 'Status', render: (u) => pill(u.status) },
      { label: 'Last sign-in', render: (u) => timeEl(u.last_login_at) },
      { label: 'Created', render: (u) => timeEl(u.created_at) },
    ];
    if (data.can_manage) cols.push({ label: 'Actions', class: 'actions', render: actions });
    const rows = users.map((u) => Object.assign({ __attrs: { 'data-email': u.email, 'data-status': u.status } }, u));
    listBox.appendChild(h('section', { class: 'panel', 'aria-labelledby': 'users-h' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'users-h' }, `People (${users.length})`),
        data.can_manage ? null : h('span', { class: 'muted' }, 'Only administrators can change users.')),
      table(cols, rows, { empty: 'No users yet.', caption: 'Users' })));
  }

  function roleSelect(u) {
    const s = select('role', ROLES, roleOf(u));
    s.setAttribute('aria-label', `Role of ${u.email}`);
    s.style.width = 'auto';
    s.addEventListener('change', async () => {
      const prev = roleOf(u);
      // A role change takes effect at once (and ends the user's sessions), so ask first.
      const ok = await confirmDialog({ title: 'Change role?', message: `Change ${u.email} from ${prev} to ${s.value}? Their open sessions end and they sign in again with the new role.`, confirmLabel: `Make ${s.value}` });
      if (!ok) { s.value = prev; return; }
      try {
        await api.patch('/v1/users/' + encodeURIComponent(u.id), { role: s.value });
        show(alertBox('ok', null, `${u.email} is now ${s.value}.`));
        await load();
      } catch (e) {
        s.value = prev;
        showError(`Could not change the role of ${u.email}`, e);
      }
    });
    return s;
  }

  function actions(u) {
    const out = [];
    const act = (label, cls, fn) => {
      const b = h('button', { type: 'button', class: 'btn-sm ' + (cls || ''), 'aria-label': `${label} ${u.email}` }, label);
      b.addEventListener('click', fn);
      out.push(b);
    };
    if (u.status === 'active') act('Suspend', '', () => setStatus(u, 'suspended', 'Suspend user', `${u.email} will be signed out and cannot sign in or use personal API keys until reactivated.`, 'Suspend'));
    if (u.status === 'suspended') act('Reactivate', '', () => setStatus(u, 'active'));
    if (u.status === 'invited') act('Sign-in link', '', () => showLink(u, data.login_url));
    if (u.status !== 'archived') act('Archive', 'btn-danger', () => setStatus(u, 'archived', 'Archive user permanently?',
      `Archiving ${u.email} is permanent: the account can never sign in again, its personal API keys are revoked and the email cannot be re-invited.`, 'Archive permanently', true));
    return out.length ? out : h('span', { class: 'muted' }, '—');
  }

  async function setStatus(u, status, title, message, confirmLabel, danger) {
    if (title) {
      const ok = await confirmDialog({ title, message, confirmLabel, danger: danger || status === 'suspended' });
      if (!ok) return;
    }
    try {
      await api.patch('/v1/users/' + encodeURIComponent(u.id), { status });
      const verb = { active: 'reactivated', suspended: 'suspended', archived: 'archived' }[status];
      show(alertBox('ok', null, `${u.email} was ${verb}.`));
      toast(`${u.email} ${verb}`);
      await load();
    } catch (e) {
      showError(`Could not change ${u.email}`, e);
    }
  }

  function showLink(u, url) {
    show(alertBox('info', `Share this sign-in link with ${u.email}`,
      'No email is sent. They become active the first time they sign in with this email address.',
      h('div', { class: 'secret-box' }, h('code', { id: 'invite-link' }, url || '(login URL unknown)'), copyButton(url || '', 'Copy sign-in link'))));
  }

  function openInvite() {
    const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'off', maxlength: '255' });
    const name = h('input', { type: 'text', name: 'full_name', autocomplete: 'off', maxlength: '255' });
    const role = select('role', ROLES, 'member');
    const err = h('div', { 'aria-live': 'assertive' });
    const form = h('form', { id: 'invite-form', novalidate: true }, err,
      field('Email', email, 'They sign in with this address (email or SSO through the registry).'),
      field('Full name', name),
      field('Role', role, 'Admins manage users, keys and settings; members write threads; viewers only read.'));
    let d;
    const submit = async () => {
      clear(err);
      if (!email.value.trim() || !email.checkValidity()) {
        email.setAttribute('aria-invalid', 'true');
        err.appendChild(alertBox('bad', null, 'Enter a valid email address.'));
        email.focus();
        return false;
      }
      try {
        const res = await api.post('/v1/users', { email: email.value.trim(), full_name: name.value.trim(), role: role.value });
        const u = res.user || {};
        showLink(u.email ? u : { email: email.value.trim() }, res.login_url || data.login_url);
        toast(res.created === false ? 'Invitation already exists' : 'User invited');
        await load();
        return true;
      } catch (e) {
        err.appendChild(alertBox('bad', 'Could not invite', explain(e)));
        return false;
      }
    };
    form.addEventListener('submit', (e) => { e.preventDefault(); submit().then((ok) => { if (ok) d.close(); }); });
    d = dialog({ title: 'Invite a user', body: form, buttons: [{ label: 'Cancel' }, { label: 'Invite', class: 'btn-primary', onClick: submit }] });
  }

  await load();
  add(root, 
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', {}, 'Users'), h('p', { class: 'desc' }, 'People who can sign in to this engine. Invitations send no email: share the sign-in link.')),
      inviteBtn),
    msg, listBox);
  return root;
}
