// Settings → Engine → Engine URL: a UI override of server.public_url, stored
// by the engine, applied at once; "Use config default" removes it.
import { h, add, clear, pill, alertBox, field, copyButton, toast } from '../ui.js';
import { api, explain, pageApiBase } from '../api.js';
import { state, loadEngine } from '../app.js';
import { retentionPanel } from './ops.js';

const LOOPBACK_NAMES = { localhost: 'localhost', '127.0.0.1': '127.0.0.1' };

// loopbackMix explains why the page and the engine URL must not mix
// localhost and 127.0.0.1 (browsers treat them as different sites, so the
// session cookie and the Origin check fail); '' when they do not mix.
export function loopbackMix(pageUrl, engineUrl) {
  let a, b;
  try { a = new URL(pageUrl).hostname; b = new URL(engineUrl).hostname; } catch (_) { return ''; }
  if (LOOPBACK_NAMES[a] && LOOPBACK_NAMES[b] && a !== b) {
    return `This page is open on ${a} but the engine URL uses ${b}. Browsers treat them as different sites, so sign-in cookies and origin checks break. Use the same host name in both.`;
  }
  return '';
}

export async function renderEngineSettings() {
  const msg = h('div', { id: 'settings-msg', 'aria-live': 'polite' });
  const body = h('div', {});
  let s;

  async function reload() { s = await loadEngine(); draw(); }

  function draw() {
    clear(body);
    const canManage = !!s.can_manage;
    const input = h('input', { type: 'url', id: 'engine-url', name: 'public_url', value: s.source === 'ui' ? s.public_url : '',
      placeholder: s.config_public_url || 'https://engine.example.com', spellcheck: 'false', autocomplete: 'off', disabled: !canManage || null });
    const live = h('div', { 'aria-live': 'polite', id: 'engine-url-warning' });
    const check = () => {
      clear(live);
      const v = input.value.trim();
      if (!v) return;
      const mix = loopbackMix(location.href, v);
      if (mix) live.appendChild(alertBox('warn', 'localhost and 127.0.0.1 are mixed', mix));
    };
    input.addEventListener('input', check);
    const save = h('button', { type: 'submit', class: 'btn-primary', id: 'save-engine-url', disabled: !canManage || null }, 'Save');
    const reset = h('button', { type: 'button', id: 'reset-engine-url', disabled: !canManage || s.source !== 'ui' || null }, 'Use config default');
    const form = h('form', { id: 'engine-form', novalidate: true },
      field('Engine URL', input, 'Where clients (SDK engineUrl, OpenTelemetry, GraphQL) reach this engine, including any reverse-proxy path prefix. Saved values override server.public_url, persist across restarts and apply immediately.'),
      live,
      h('div', { class: 'row' }, save, reset,
        canManage ? null : h('span', { class: 'muted' }, 'Only administrators can change the engine URL.')));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clear(msg);
      const v = input.value.trim();
      if (!v) { msg.appendChild(alertBox('bad', null, 'Enter a URL, or use the config default.')); input.focus(); return; }
      save.disabled = true;
      try {
        await api.put('/v1/engine/settings', { public_url: v }, { base: pageApiBase() });
        await reload();
        msg.appendChild(alertBox('ok', null, 'Engine URL saved. It applies immediately.'));
        toast('Engine URL saved');
      } catch (err) {
        input.setAttribute('aria-invalid', 'true');
        msg.appendChild(alertBox('bad', 'Could not save the engine URL', explain(err)));
        save.disabled = false;
      }
    });
    reset.addEventListener('click', async () => {
      clear(msg);
      try {
        await api.del('/v1/engine/settings', { base: pageApiBase() });
        await reload();
        msg.appendChild(alertBox('ok', null, 'The override was removed; the config value (server.public_url) applies.'));
      } catch (err) {
        msg.appendChild(alertBox('bad', 'Could not remove the override', explain(err)));
      }
    });

    const sourceText = { ui: 'set in the UI', config: 'from server.public_url', unset: 'not configured' }[s.source] || s.source;
    const ep = s.endpoints || {};
    const eps = [['HTTP', ep.http], ['WebSocket (SDK)', ep.websocket], ['GraphQL', ep.graphql], ['OpenTelemetry (OTLP/HTTP)', ep.otel], ['MCP', ep.mcp]];
    add(body, 
      h('div', { class: 'cards' },
        h('div', { class: 'card' }, h('div', { class: 'k' }, 'Effective engine URL'), h('div', { class: 'v mono', id: 'effective-url' }, s.public_url || '—')),
        h('div', { class: 'card' }, h('div', { class: 'k' }, 'Source'), h('div', { class: 'v', id: 'engine-url-source' }, pill(s.source), ' ', h('span', { class: 'muted', style: 'font-weight:400' }, sourceText))),
        h('div', { class: 'card' }, h('div', { class: 'k' }, 'Config default'), h('div', { class: 'v mono' }, s.config_public_url || '—'))),
      s.apiNote === 'other-origin'
        ? alertBox('info', 'The UI keeps calling this origin', 'The engine URL is on another origin than this page. It is advertised to clients, but browser sessions and credentials are not sent to another host.') : null,
      s.apiNote === 'unreachable'
        ? h('div', { id: 'engine-url-unreachable' }, alertBox('warn', 'The engine URL does not answer from this page', `${s.public_url}/healthz did not respond, so the UI keeps using ${pageApiBase()}. Check the proxy path prefix, or use the config default.`)) : null,
      h('section', { class: 'panel', 'aria-labelledby': 'eu-h' }, h('h2', { id: 'eu-h' }, 'Engine URL'), h('div', { class: 'panel-body' }, form)),
      h('section', { class: 'panel', 'aria-labelledby': 'ep-h' }, h('h2', { id: 'ep-h' }, 'Client endpoints'),
        h('div', { class: 'panel-body' }, h('dl', { class: 'kv', id: 'endpoints' }, eps.map(([k, v]) => [h('dt', {}, k),
          h('dd', {}, v ? h('span', { class: 'row' }, h('code', {}, v), copyButton(v, 'Copy ' + k + ' endpoint')) : h('span', { class: 'muted' }, 'not available until an engine URL is set'))])))));
    check();
  }

  await reload();
  return h('div', {},
    h('div', { class: 'crumbs' }, 'Settings / Engine'),
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Engine settings'), h('p', { class: 'desc' }, 'The address this engine advertises to SDKs, exporters and this UI.'))),
    msg, body, retentionPanel());
}
