// Waterfall: every attempt as a bar on a shared time axis, from its start to
// its end (or a tick at its record time when it carries no timing). Attempts
// that came from OTLP spans keep their parent nesting: a child span sits
// under its parent, indented.
import { h } from '../ui.js';
import { fmtDuration, fmtDateTime } from '../fmt.js';

function parse(s) { if (!s) return null; const d = new Date(s).getTime(); return isNaN(d) ? null : d; }
function meta(a) { try { return JSON.parse(a.metadata || '{}') || {}; } catch (_) { return {}; } }

// order puts each span right after its parent (depth first), keeping record
// order among siblings; attempts without span ids keep record order.
function order(attempts) {
  const rows = attempts.map((a, i) => {
    const m = meta(a);
    return { a, i, span: m.otel_span_id || null, parent: m.otel_parent_span_id || null, kids: [], depth: 0 };
  });
  const bySpan = new Map(rows.filter((r) => r.span).map((r) => [r.span, r]));
  const roots = [];
  for (const r of rows) {
    const p = r.parent && bySpan.get(r.parent);
    if (p && p !== r) p.kids.push(r); else roots.push(r);
  }
  const out = [];
  const walk = (r, d) => { r.depth = d; out.push(r); for (const k of r.kids) walk(k, d + 1); };
  for (const r of roots) walk(r, 0);
  return out;
}

// tone(a) colours an attempt (default: its run status); altered(a) marks the
// attempt whose recorded data no longer matches its hash.
export function drawWaterfall(attempts, { threadStart, tone: toneOf, altered } = {}) {
  if (!attempts.length) return h('div', { class: 'empty' }, 'No attempts recorded yet.');
  const rows = order(attempts).map((r) => {
    const at = parse(r.a.timestamp);
    let start = parse(r.a.startedAt); let end = parse(r.a.finishedAt);
    if (start === null && end === null) { start = at; end = at; }
    if (start === null) start = end - (r.a.duration || 0);
    if (end === null) end = Math.max(start, at || start);
    return Object.assign(r, { start, end });
  });
  const t0 = Math.min(...rows.map((r) => r.start), parse(threadStart) || Infinity);
  const t1 = Math.max(...rows.map((r) => r.end), t0 + 1);
  const span = t1 - t0;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => h('span', { class: 'wf-tick', style: `left:${f * 100}%` }, '+' + fmtDuration(f * span)));
  const axis = h('div', { class: 'wf-row wf-axis' }, h('div', { class: 'wf-label muted small' }, 'from ' + fmtDateTime(new Date(t0).toISOString(), { ms: true })), h('div', { class: 'wf-track' }, ticks), h('div', { class: 'wf-dur' }));
  const body = rows.map((r) => {
    const a = r.a;
    const left = ((r.start - t0) / span) * 100;
    const width = Math.max(((r.end - r.start) / span) * 100, 0);
    const changed = altered ? altered(a) : false;
    const tone = changed ? 'bad' : toneOf ? toneOf(a) : a.status === 'failed' || a.status === 'error' ? 'bad' : a.status === 'success' || a.status === 'completed' ? 'ok' : 'info';
    const dur = r.end - r.start;
    const title = `${a.stepName} attempt ${a.attempt} · ${a.status}${a.validation && a.validation !== 'passed' ? ' · ' + a.validation : ''}${changed ? ' · altered: hash mismatch' : ''} · ${fmtDuration(dur)} · ${fmtDateTime(new Date(r.start).toISOString(), { ms: true })}${a.error ? ' · ' + a.error : ''}`;
    return h('div', { class: 'wf-row', 'data-step': a.stepName, 'data-depth': String(r.depth), 'data-tone': tone, title },
      h('div', { class: 'wf-label', style: `padding-left:${8 + r.depth * 16}px` },
        r.depth ? h('span', { class: 'muted', 'aria-hidden': 'true' }, '└ ') : null,
        h('a', { href: '#step-' + encodeURIComponent(a.stepName), class: 'mono' }, a.stepName),
        a.attempt > 1 ? h('span', { class: 'muted small' }, ` #${a.attempt}`) : null,
        changed ? h('span', { class: 'pill bad wf-altered', 'data-altered': a.stepName }, 'altered') : null),
      h('div', { class: 'wf-track' }, h('span', { class: 'wf-bar ' + tone + (width < 0.4 ? ' point' : ''), style: `left:${left}%;width:${width}%` })),
      h('div', { class: 'wf-dur num' + (tone === 'bad' ? ' bad' : '') }, dur ? fmtDuration(dur) : '—'));
  });
  return h('div', { class: 'waterfall', id: 'waterfall', role: 'table', 'aria-label': 'Attempts on a time axis' }, axis, body);
}
