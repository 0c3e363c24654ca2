// One time format for the whole UI (24 h, with the zone shown), a UTC/local
// toggle remembered in the browser, durations, and thread health badges.
import { h } from './ui.js';

const KEY = 'threadengine.tz';
export function useUTC() { try { return localStorage.getItem(KEY) === 'utc'; } catch (_) { return false; } }
export function setUTC(on) { try { localStorage.setItem(KEY, on ? 'utc' : 'local'); } catch (_) { /* private mode: per page only */ } }

// fmtDateTime: "2026-11-23 17:04:05 UTC" or "2026-11-23 18:04:05 GMT+1".
export function fmtDateTime(s, { ms } = {}) {
  if (!s) return '—';
  const d = new Date(s);
  if (isNaN(d)) return String(s);
  const utc = useUTC();
  const opts = { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'short' };
  if (ms) opts.fractionalSecondDigits = 3;
  if (utc) opts.timeZone = 'UTC';
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-CA', opts).formatToParts(d).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}${ms ? '.' + parts.fractionalSecond : ''} ${parts.timeZoneName}`;
}

// fmtDuration: 850 ms, 12.3 s, 4 min 05 s, 2 h 10 min, 3 d 4 h.
export function fmtDuration(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return '—';
  ms = Math.max(0, Number(ms));
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return (s < 10 ? s.toFixed(2) : s.toFixed(1)) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
  const hr = Math.floor(m / 60);
  if (hr < 48) return `${hr} h ${String(m % 60).padStart(2, '0')} min`;
  return `${Math.floor(hr / 24)} d ${hr % 24} h`;
}

// Health: a violation is never green; FAILED and VIOLATED are red, WARNING
// amber, OK green.
const healthTone = { OK: 'ok', WARNING: 'warn', VIOLATED: 'bad', FAILED: 'bad' };
const healthText = { OK: 'OK', WARNING: 'Warnings', VIOLATED: 'Violated', FAILED: 'Failed' };
export function healthBadge(health) {
  const st = (health && health.status) || 'OK';
  const counts = health ? [health.failedSteps ? `${health.failedSteps} failed step${health.failedSteps === 1 ? '' : 's'}` : null,
    health.critical ? `${health.critical} critical` : null, health.major ? `${health.major} major` : null,
    health.warnings ? `${health.warnings} warning${health.warnings === 1 ? '' : 's'}` : null].filter(Boolean).join(', ') : '';
  return h('span', { class: 'pill health ' + healthTone[st], 'data-health': st, title: counts || 'No failed steps and no violations' },
    st === 'OK' ? '✓ ' : st === 'WARNING' ? '! ' : '✕ ', healthText[st] || st);
}

// Thread status colours: active (running) is blue, completed green, failed red,
// cancelled grey — active never looks like completed.
const statusTone = { active: 'info', completed: 'ok', failed: 'bad', cancelled: 'neutral', closed: 'neutral' };
export function statusPill(status) {
  return h('span', { class: 'pill ' + (statusTone[status] || 'neutral'), 'data-status': status }, status || '—');
}

// reasonText is the one line saying why a thread is not OK.
export function reasonText(t) {
  const is = t.health && t.health.firstIssue;
  if (is) return `${is.stepName}: ${is.message}`;
  if (t.error) return t.error;
  return '';
}

// timeTag: a <time>; stacked puts the date above the time and zone, for
// narrow table columns.
export function timeTag(s, { stacked } = {}) {
  if (!s) return h('span', { class: 'muted' }, '—');
  const txt = fmtDateTime(s);
  if (!stacked) return h('time', { datetime: s, title: s }, txt);
  const i = txt.indexOf(' ');
  return h('time', { datetime: s, title: s, class: 'stacked' }, txt.slice(0, i), h('br', {}), h('span', { class: 'muted' }, txt.slice(i + 1)));
}

// tzToggle switches every time on the page between local time and UTC.
export function tzToggle(onChange) {
  const b = h('button', { type: 'button', class: 'btn-sm', id: 'tz-toggle', 'aria-pressed': String(useUTC()) }, useUTC() ? 'Times in UTC' : 'Times in local zone');
  b.addEventListener('click', () => { setUTC(!useUTC()); if (onChange) onChange(); });
  return b;
}

// soFar is how long a running thread has run: from its start to now (its
// recorded duration stops at its latest step).
export function soFar(t) {
  const start = new Date(t.startedAt).getTime();
  return isNaN(start) ? t.durationMs : Math.max(t.durationMs, Date.now() - start);
}
