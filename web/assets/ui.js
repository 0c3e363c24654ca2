// Small DOM helpers: the UI has no framework, so views build elements with h().
import { fmtDateTime } from './fmt.js';

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'html') el.innerHTML = v; // only ever used with constant markup
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// add appends children, skipping null/false (Element.append would print "null").
export function add(el, ...children) { append(el, children); return el; }

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

const tones = {
  active: 'ok', completed: 'ok', verified: 'ok', passed: 'ok', success: 'ok', ok: 'ok', valid: 'ok',
  invited: 'info', in_progress: 'info', started: 'info', running: 'info', pending: 'info', ui: 'info',
  suspended: 'warn', warning: 'warn', retrying: 'warn', retry: 'warn', expired: 'warn', cancelled: 'warn', skipped: 'warn',
  archived: 'neutral', revoked: 'neutral', config: 'neutral', unset: 'neutral',
  failed: 'bad', error: 'bad', broken: 'bad', critical: 'bad', invalid: 'bad', timeout: 'bad', timed_out: 'bad',
};

export function toneOf(status) { return tones[String(status || '').toLowerCase()] || 'neutral'; }

export function pill(text, tone) {
  return h('span', { class: 'pill ' + (tone || toneOf(text)) }, String(text || '—').replace(/_/g, ' '));
}

// timeEl uses the UI's one time format (24 h, zone shown, the UTC/local
// toggle), as the thread pages do.
export function timeEl(s) {
  if (!s) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: s, title: s }, fmtDateTime(s));
}

export function relTime(s) {
  if (!s) return '—';
  const d = new Date(s);
  if (isNaN(d)) return String(s);
  const sec = Math.round((Date.now() - d.getTime()) / 1000);
  const abs = Math.abs(sec);
  const f = (n, u) => `${n} ${u}${n === 1 ? '' : 's'}`;
  let out;
  if (abs < 60) out = f(abs, 'second');
  else if (abs < 3600) out = f(Math.round(abs / 60), 'minute');
  else if (abs < 86400) out = f(Math.round(abs / 3600), 'hour');
  else out = f(Math.round(abs / 86400), 'day');
  return sec >= 0 ? out + ' ago' : 'in ' + out;
}

export function toast(msg) {
  const box = document.getElementById('toasts');
  const t = h('div', { class: 'toast' }, msg);
  box.appendChild(t);
  setTimeout(() => t.remove(), 4000);
}

export function alertBox(tone, title, body, extra) {
  return h('div', { class: 'alert ' + tone, role: tone === 'bad' ? 'alert' : 'status' },
    h('div', { class: 'grow' }, title ? h('strong', {}, title) : null, body ? h('span', {}, body) : null, extra || null));
}

export async function copyText(text, btn) {
  let ok = false;
  try {
    if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(text); ok = true; }
  } catch (_) { /* fall through to the selection fallback */ }
  if (!ok) {
    const ta = h('textarea', { style: 'position:fixed;left:-9999px', 'aria-hidden': 'true' });
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    try { ok = document.execCommand('copy'); } catch (_) { ok = false; }
    ta.remove();
  }
  if (btn) {
    const old = btn.textContent;
    btn.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => { btn.textContent = old; }, 1600);
  }
  toast(ok ? 'Copied to clipboard' : 'Copy failed: select the text and copy it manually');
  return ok;
}

export function copyButton(text, label) {
  const b = h('button', { type: 'button', class: 'btn-sm', 'aria-label': label || 'Copy to clipboard' }, 'Copy');
  b.addEventListener('click', () => copyText(text, b));
  return b;
}

// dialog opens a modal <dialog>; build(close) returns the body, footer buttons
// are given as [{label, class, onClick}] (onClick may return false to keep it open).
export function dialog({ title, body, buttons, labelledBy }) {
  const id = 'dlg-' + Math.random().toString(36).slice(2);
  const foot = h('div', { class: 'dialog-foot' });
  const dlg = h('dialog', { 'aria-labelledby': id + '-t' },
    h('h2', { id: id + '-t' }, title),
    h('div', { class: 'dialog-body' }, body),
    foot);
  const close = () => { dlg.close(); dlg.remove(); };
  for (const b of buttons || []) {
    const el = h('button', { type: b.type || 'button', class: b.class || '' }, b.label);
    el.addEventListener('click', async () => {
      if (!b.onClick) return close();
      el.disabled = true;
      try {
        const r = await b.onClick(el);
        if (r !== false) close();
      } finally { el.disabled = false; }
    });
    foot.appendChild(el);
  }
  dlg.addEventListener('cancel', () => dlg.remove());
  document.body.appendChild(dlg);
  dlg.showModal();
  const first = dlg.querySelector('input, select, textarea') || foot.querySelector('button');
  if (first) first.focus();
  return { el: dlg, close };
}

export function confirmDialog({ title, message, confirmLabel, danger }) {
  return new Promise((resolve) => {
    let done = false;
    const d = dialog({
      title,
      body: h('p', { style: 'margin:0' }, message),
      buttons: [
        { label: 'Cancel', onClick: () => { done = true; resolve(false); } },
        { label: confirmLabel || 'Confirm', class: danger ? 'btn-danger solid' : 'btn-primary', onClick: () => { done = true; resolve(true); } },
      ],
    });
    d.el.addEventListener('close', () => { if (!done) resolve(false); });
    // Danger dialogs focus Cancel first so Enter does not destroy by accident.
    d.el.querySelector('.dialog-foot button').focus();
  });
}

export function field(label, input, hint) {
  if (!input.id) input.id = 'f-' + Math.random().toString(36).slice(2);
  const hintEl = hint ? h('div', { class: 'hint', id: input.id + '-hint' }, hint) : null;
  if (hintEl) input.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input, hintEl);
}

export function select(name, options, value) {
  const s = h('select', { name });
  for (const o of options) {
    const [v, l] = Array.isArray(o) ? o : [o, o];
    const opt = h('option', { value: v }, l);
    if (v === value) opt.selected = true;
    s.appendChild(opt);
  }
  return s;
}

export function table(columns, rows, { empty, caption } = {}) {
  const wrap = h('div', { class: 'table-wrap' });
  if (!rows.length) {
    wrap.appendChild(h('div', { class: 'empty' }, empty || 'Nothing here yet.'));
    return wrap;
  }
  const t = h('table', { class: 'responsive' },
    caption ? h('caption', { class: 'sr-only' }, caption) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.class || '' }, c.label)))),
    h('tbody', {}, rows.map((r) => h('tr', r.__attrs || {}, columns.map((c) => {
      const v = c.render(r);
      return h('td', { 'data-label': c.label, class: c.class || '' }, v);
    })))));
  wrap.appendChild(t);
  return wrap;
}

export function json(v) {
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted' }, '—');
  let val = v;
  if (typeof v === 'string') { try { val = JSON.parse(v); } catch (_) { return h('pre', { class: 'json' }, v); } }
  return h('pre', { class: 'json' }, JSON.stringify(val, null, 2));
}
