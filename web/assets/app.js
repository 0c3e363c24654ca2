// threadengine UI entry point: session check, shell (left nav) and router.
import { h, add, clear, pill, toast, alertBox } from './ui.js';
import { api, pageBase, pageApiBase, engineApiBase, setApiBase, onUnauthenticated, ApiError, explain } from './api.js';
import { renderThreads } from './views/threads.js';
import { renderThread } from './views/thread.js';
import { renderUsers } from './views/users.js';
import { renderKeys } from './views/keys.js';
import { renderEngineSettings, loopbackMix } from './views/settings.js';
import { renderAudit } from './views/ops.js';
import { renderWebhooks, renderWebhook } from './views/webhooks.js';
import { renderContracts, renderContract, renderOverview } from './views/contracts.js';
import { renderContractEditor } from './views/editor.js';
import { renderProblems } from './views/problems.js';

export const state = { me: null, engine: null };

const routes = [
  { re: /^threads\/?$/, nav: 'threads', title: 'Threads', view: renderThreads },
  { re: /^threads\/([^/]+)\/?$/, nav: 'threads', title: 'Thread', view: renderThread },
  { re: /^overview\/?$/, nav: 'overview', title: 'Overview', view: renderOverview },
  { re: /^problems\/?$/, nav: 'problems', title: 'Problems', view: renderProblems },
  { re: /^contracts\/?$/, nav: 'contracts', title: 'Contracts', view: renderContracts },
  { re: /^contracts\/new\/?$/, nav: 'contracts', title: 'New contract', view: renderContractEditor },
  { re: /^contracts\/([^/]+)\/edit\/?$/, nav: 'contracts', title: 'Edit contract', view: renderContractEditor },
  { re: /^contracts\/([^/]+)(?:\/(\d+))?\/?$/, nav: 'contracts', title: 'Contract', view: renderContract },
  { re: /^users\/?$/, nav: 'users', title: 'Users', view: renderUsers },
  { re: /^api-keys\/?$/, nav: 'api-keys', title: 'API keys', view: renderKeys },
  { re: /^settings(\/engine)?\/?$/, nav: 'settings', title: 'Engine settings', view: renderEngineSettings },
  { re: /^audit\/?$/, nav: 'audit', title: 'Audit log', view: renderAudit },
  { re: /^webhooks\/?$/, nav: 'webhooks', title: 'Webhooks', view: renderWebhooks },
  { re: /^webhooks\/([^/]+)\/?$/, nav: 'webhooks', title: 'Webhook', view: renderWebhook },
];

const icons = {
  overview: '<path d="M3 17V9M8 17V4M13 17v-6M18 17V7" stroke="currentColor" stroke-width="2" stroke-linecap="round"/>',
  contracts: '<rect x="4" y="2.5" width="12" height="15" rx="2" stroke="currentColor" stroke-width="2" fill="none"/><path d="M7 7h6M7 10.5h6M7 14h3" stroke="currentColor" stroke-width="2" stroke-linecap="round"/>',
  problems: '<path d="M10 2.5L18 17H2z" stroke="currentColor" stroke-width="2" fill="none" stroke-linejoin="round"/><path d="M10 8v4M10 14.5v.5" stroke="currentColor" stroke-width="2" stroke-linecap="round"/>',
  threads: '<path d="M3 5h14M3 10h9M3 15h11" stroke="currentColor" stroke-width="2" stroke-linecap="round"/>',
  users: '<circle cx="8" cy="7" r="3" stroke="currentColor" stroke-width="2" fill="none"/><path d="M2.5 17c.8-3 3-4.5 5.5-4.5s4.7 1.5 5.5 4.5M13.5 4.5a3 3 0 010 5M15 12.7c1.3.6 2.2 2 2.6 4.3" stroke="currentColor" stroke-width="2" fill="none" stroke-linecap="round"/>',
  'api-keys': '<circle cx="6.5" cy="13.5" r="3.5" stroke="currentColor" stroke-width="2" fill="none"/><path d="M9 11l7-7M13 7l2.5 2.5M15 5l2 2" stroke="currentColor" stroke-width="2" stroke-linecap="round"/>',
  settings: '<circle cx="10" cy="10" r="2.5" stroke="currentColor" stroke-width="2" fill="none"/><path d="M10 2v3M10 15v3M2 10h3M15 10h3M4.3 4.3l2.1 2.1M13.6 13.6l2.1 2.1M4.3 15.7l2.1-2.1M13.6 6.4l2.1-2.1" stroke="currentColor" stroke-width="2" stroke-linecap="round"/>',
};

function icon(name) {
  const s = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  s.setAttribute('viewBox', '0 0 20 20'); s.setAttribute('width', '18'); s.setAttribute('height', '18');
  s.setAttribute('aria-hidden', 'true'); s.setAttribute('fill', 'none');
  s.innerHTML = icons[name];
  return s;
}

// UI pages live under <base>/ui/ so they never shadow API routes.
export const uiBase = pageBase + 'ui/';
export function href(path) { return uiBase + path.replace(/^\//, ''); }

export function navigate(path, { replace } = {}) {
  const url = href(path);
  if (replace) history.replaceState({}, '', url); else history.pushState({}, '', url);
  route();
}

export function link(path, text, attrs) {
  return h('a', Object.assign({ href: href(path), 'data-link': '' }, attrs || {}), text);
}

function normalizeSession(d) {
  const p = (d && (d.principal || d.user)) || d || {};
  return {
    id: p.id || p.user_id || '',
    kind: p.kind || (d && d.subject_kind) || 'user',
    email: p.email || '',
    name: p.full_name || p.name || '',
    role: p.role || (Array.isArray(p.roles) ? p.roles[0] : '') || '',
    raw: d,
  };
}

let shell;
function renderShell() {
  const app = document.getElementById('app');
  clear(app);
  const me = state.me;
  const isHuman = me.kind !== 'service_account';
  const navItems = [
    h('li', {}, h('div', { class: 'section' }, 'Observe')),
    navLink('overview', 'Overview'),
    navLink('problems', 'Problems'),
    navLink('threads', 'Threads'),
    navLink('contracts', 'Contracts'),
    h('li', {}, h('div', { class: 'section' }, 'Administration')),
    isHuman ? navLink('users', 'Users') : null,
    navLink('api-keys', 'API keys'),
    navLink('settings/engine', 'Engine settings', 'settings'),
    isHuman && me.role === 'admin' ? navLink('audit', 'Audit log', 'users') : null,
    isHuman && me.role === 'admin' ? navLink('webhooks', 'Webhooks', 'settings') : null,
  ];
  const signOut = h('button', { type: 'button', class: 'btn-sm', id: 'sign-out' }, 'Sign out');
  signOut.addEventListener('click', async () => {
    // With an identity provider the engine answers its logout URL: follow it,
    // so the provider's session ends too and another account can sign in.
    let next = pageBase + 'login';
    try { const r = await api.post('/auth/logout', {}); if (r && r.logout_url) next = r.logout_url; } catch (_) { /* the cookie is gone or the session ended anyway */ }
    location.assign(next);
  });
  const sidebar = h('nav', { class: 'sidebar', id: 'sidebar', 'aria-label': 'Main navigation' },
    h('a', { class: 'brand', href: href('threads'), 'data-link': '' }, logo(), 'threadengine'),
    h('ul', { class: 'nav' }, navItems),
    h('div', { class: 'sidebar-foot' },
      h('div', { class: 'who', id: 'whoami' }, me.name || me.email || (me.kind === 'service_account' ? 'Service account' : 'Signed in')),
      h('div', { class: 'sub' }, [me.email && me.name ? me.email : null, me.role ? me.role : null, me.kind === 'service_account' ? 'service account' : null].filter(Boolean).join(' · ')),
      signOut));
  const menuBtn = h('button', { type: 'button', 'aria-controls': 'sidebar', 'aria-expanded': 'false', 'aria-label': 'Open navigation' }, '☰');
  menuBtn.addEventListener('click', () => {
    const open = !app.classList.contains('nav-open');
    app.classList.toggle('nav-open', open);
    menuBtn.setAttribute('aria-expanded', String(open));
    if (open) sidebar.querySelector('a').focus();
  });
  const topbar = h('header', { class: 'topbar' }, menuBtn, h('span', { class: 'title' }, 'threadengine'));
  const banner = h('div', { id: 'banner', class: 'banner' });
  const content = h('main', { class: 'content', id: 'main', tabindex: '-1' });
  add(app, sidebar, h('div', { class: 'main' }, topbar, banner, content));
  // On a phone the open menu covers the page; a tap beside it closes it.
  app.querySelector('.main').addEventListener('click', (e) => {
    if (app.classList.contains('nav-open') && !menuBtn.contains(e.target)) { app.classList.remove('nav-open'); menuBtn.setAttribute('aria-expanded', 'false'); }
  });
  app.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && app.classList.contains('nav-open')) { app.classList.remove('nav-open'); menuBtn.setAttribute('aria-expanded', 'false'); menuBtn.focus(); }
  });
  shell = { app, content, sidebar, banner };
  renderBanner();
}

export function renderBanner() {
  if (!shell) return;
  clear(shell.banner);
  const eng = state.engine;
  if (!eng) return;
  const mix = loopbackMix(location.href, eng.public_url);
  if (mix) {
    shell.banner.appendChild(alertBox('warn', 'localhost and 127.0.0.1 are mixed', mix));
  }
}

function logo() {
  const s = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  s.setAttribute('viewBox', '0 0 32 32'); s.setAttribute('width', '26'); s.setAttribute('height', '26'); s.setAttribute('aria-hidden', 'true');
  s.innerHTML = '<rect width="32" height="32" rx="7" fill="#3b5bdb"/><path d="M7 10h18M7 16h12M7 22h15" stroke="#fff" stroke-width="3" stroke-linecap="round"/><circle cx="24" cy="16" r="3" fill="#ffd43b"/>';
  return s;
}

function navLink(path, label, iconName) {
  return h('li', {}, h('a', { href: href(path), 'data-link': '', 'data-nav': path.split('/')[0] }, icon(iconName || path), label));
}

let routeSeq = 0;
let fragmentLoader = null; // see onMissingFragment
export async function route() {
  const seq = ++routeSeq;
  let path = location.pathname.startsWith(uiBase) ? location.pathname.slice(uiBase.length) : '';
  if (path === '' || path === 'index.html') { history.replaceState({}, '', href('threads') + (path === '' ? location.search : '')); path = 'threads'; }
  let match = null; let r;
  for (r of routes) { match = path.match(r.re); if (match) break; }
  shell.app.classList.remove('nav-open');
  const mb = shell.app.querySelector('[aria-controls=sidebar]');
  if (mb) mb.setAttribute('aria-expanded', 'false');
  fragmentLoader = null;
  for (const a of shell.sidebar.querySelectorAll('a[data-nav]')) {
    if (match && a.dataset.nav === r.nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const content = clear(shell.content);
  if (!match) {
    document.title = 'Not found · threadengine';
    add(content, h('div', { class: 'page-head' }, h('h1', {}, 'Page not found')), h('p', {}, 'There is no page at this address. ', link('threads', 'Go to threads')));
    return;
  }
  document.title = r.title + ' · threadengine';
  content.appendChild(h('p', { class: 'loading', role: 'status' }, 'Loading…'));
  try {
    const node = await r.view({ params: match.slice(1).map(decodeURIComponent), query: new URLSearchParams(location.search), state, isCurrent: () => seq === routeSeq });
    if (seq !== routeSeq) return;
    clear(content);
    if (node) content.appendChild(node);
  } catch (e) {
    if (seq !== routeSeq) return;
    clear(content);
    content.appendChild(h('div', { class: 'page-head' }, h('h1', {}, r.title)));
    content.appendChild(alertBox('bad', e instanceof ApiError && e.status === 403 ? 'Not allowed' : 'Could not load this page', explain(e)));
  }
  const h1 = content.querySelector('h1');
  if (location.hash && scrollToFragment(location.hash.slice(1))) { /* a deep link to a part of the page */ }
  else if (h1 && document.activeElement === document.body) { /* keep focus where it is on first load */ }
  else if (h1 && !content.contains(document.activeElement)) { content.focus({ preventScroll: true }); }
}

// In-page links ("#step-pay"): the shell's <base href> would resolve them
// to the UI root and leave the page, so they scroll here instead. A step
// not loaded yet (beyond "showing N of M") scrolls to the steps panel.
// A page whose parts load on demand (a step deep in a long thread) registers
// a loader with onMissingFragment: it is asked for the element and the page
// scrolls to it once it is there.
export function onMissingFragment(fn) { fragmentLoader = fn; }
function scrollToFragment(frag) {
  if (!document.getElementById(frag) && fragmentLoader) {
    const p = fragmentLoader(frag);
    if (p && p.then) {
      p.then((el) => { if (el) scrollToElement(el); }).catch(() => {});
      return true;
    }
  }
  const el = document.getElementById(frag) || (frag.startsWith('step-') ? document.getElementById('steps-panel') : null);
  return scrollToElement(el);
}
function scrollToElement(el) {
  if (!el) return false;
  el.scrollIntoView({ block: 'start' });
  if (el.tabIndex < 0 && !el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus({ preventScroll: true });
  return true;
}

document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[href^="#"]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  const frag = a.getAttribute('href').slice(1);
  history.replaceState(history.state, '', location.pathname + location.search + '#' + frag);
  scrollToFragment(frag);
});

document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[data-link]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href);
  if (url.origin !== location.origin) return;
  e.preventDefault();
  history.pushState({}, '', url.pathname + url.search);
  route();
  window.scrollTo(0, 0);
});
window.addEventListener('popstate', route);

// loadEngine reads the engine settings (always from this page's own base, so
// a wrong engine URL can be corrected from the UI) and picks the API base:
// the engine URL when it is on this origin and answers, else this page's base.
export async function loadEngine() {
  const own = pageApiBase();
  state.engine = await api.get('/v1/engine/settings', { base: own });
  let base = engineApiBase(state.engine.public_url);
  state.engine.apiNote = '';
  if (base === null) {
    state.engine.apiNote = 'other-origin';
    base = own;
  } else if (base !== own) {
    let ok = false;
    try { ok = (await fetch(base + '/healthz', { credentials: 'same-origin', cache: 'no-store' })).ok; } catch (_) { ok = false; }
    if (!ok) { state.engine.apiNote = 'unreachable'; base = own; }
  }
  state.engine.apiBase = base;
  setApiBase(base);
  renderBanner();
  return state.engine;
}

async function boot() {
  let sess;
  try {
    sess = await api.get('/auth/session');
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) { onUnauthenticated(); return; }
    const app = clear(document.getElementById('app'));
    app.appendChild(h('main', { class: 'content' }, alertBox('bad', 'The engine is not reachable', explain(e))));
    return;
  }
  if (!sess || sess.authenticated === false) { onUnauthenticated(); return; }
  state.me = normalizeSession(sess);
  renderShell();
  try { await loadEngine(); } catch (e) { toast('Engine settings unavailable: ' + explain(e)); }
  route();
}

boot();
