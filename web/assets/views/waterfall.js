// Waterfall: every attempt as a bar on a shared time axis, from its start to
// its end (or a tick at its record time when it carries no timing). Attempts
// that came from OTLP spans keep their parent nesting: a child span sits
// under its parent, indented.
import { h } from '../ui.js';
import { fmtDuration, fmtDateTime } from '../fmt.js';

// stepDomId is the element id of one step identity (name and idempotency
// key): a step repeated under many keys (pick_item × 58) has one id each.
export function stepDomId(name, key) { return 'step-' + encodeURIComponent(name) + '/' + encodeURIComponent(key || ''); }

// Runs of at least RUN attempts of one step name in a row collapse into one
// row that expands ("pick_item × 58 (1 failed)").
const RUN = 3;

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
  const rowOf = (r) => {
    const a = r.a;
    const left = ((r.start - t0) / span) * 100;
    const width = Math.max(((r.end - r.start) / span) * 100, 0);
    const changed = altered ? altered(a) : false;
    const tone = changed ? 'bad' : toneOf ? toneOf(a) : a.status === 'failed' || a.status === 'error' ? 'bad' : a.status === 'success' || a.status === 'completed' ? 'ok' : 'info';
    const dur = r.end - r.start;
    const title = `${a.stepName} attempt ${a.attempt} · ${a.status}${a.validation && a.validation !== 'passed' ? ' · ' + a.validation : ''}${changed ? ' · altered: hash mismatch' : ''} · ${fmtDuration(dur)} · ${fmtDateTime(new Date(r.start).toISOString(), { ms: true })}${a.error ? ' · ' + a.error : ''}`;
    return h('div', { class: 'wf-row', 'data-step': a.stepName, 'data-key': a.idempotencyKey || '', 'data-depth': String(r.depth), 'data-tone': tone, title },
      h('div', { class: 'wf-label', style: `padding-left:${8 + r.depth * 16}px` },
        r.depth ? h('span', { class: 'muted', 'aria-hidden': 'true' }, '└ ') : null,
        h('a', { href: '#' + stepDomId(a.stepName, a.idempotencyKey), class: 'mono' }, a.stepName),
        a.attempt > 1 ? h('span', { class: 'muted small' }, ` #${a.attempt}`) : null,
        changed ? h('span', { class: 'pill bad wf-altered', 'data-altered': a.stepName }, 'altered') : null),
      h('div', { class: 'wf-track' }, h('span', { class: 'wf-bar ' + tone + (width < 0.4 ? ' point' : ''), style: `left:${left}%;width:${width}%` })),
      h('div', { class: 'wf-dur num' + (tone === 'bad' ? ' bad' : '') }, dur ? fmtDuration(dur) : '—'));
  };
  // Collapse runs of one step name (top-level attempts only, so spans keep
  // their nesting).
  const body = [];
  for (let i = 0; i < rows.length;) {
    let j = i;
    while (j < rows.length && rows[j].depth === 0 && !rows[j].kids.length && rows[i].depth === 0 && !rows[i].kids.length && rows[j].a.stepName === rows[i].a.stepName) j++;
    if (j - i < RUN) { body.push(rowOf(rows[i])); i++; continue; }
    const run = rows.slice(i, j);
    const tones = run.map((r) => (altered && altered(r.a)) ? 'bad' : toneOf ? toneOf(r.a) : (r.a.status === 'failed' || r.a.status === 'error') ? 'bad' : 'ok');
    const failed = tones.filter((x) => x === 'bad').length;
    const start = Math.min(...run.map((r) => r.start)); const end = Math.max(...run.map((r) => r.end));
    const tone = failed ? 'bad' : tones.includes('warn') ? 'warn' : tones.every((x) => x === 'ok') ? 'ok' : 'info';
    const members = run.map((r) => { const el = rowOf(r); el.hidden = true; el.classList.add('wf-member'); return el; });
    const name = run[0].a.stepName;
    const toggle = h('button', { type: 'button', class: 'wf-toggle', 'aria-expanded': 'false', title: 'Show each attempt' }, '▸');
    const label = `${name} × ${run.length}`;
    const row = h('div', { class: 'wf-row wf-run', 'data-run': name, 'data-count': String(run.length), 'data-tone': tone },
      h('div', { class: 'wf-label' }, toggle, ' ', h('span', { class: 'mono' }, label), failed ? h('span', { class: 'small bad' }, ` (${failed} failed)`) : null),
      h('div', { class: 'wf-track' }, h('span', { class: 'wf-bar ' + tone, style: `left:${((start - t0) / span) * 100}%;width:${Math.max(((end - start) / span) * 100, 0)}%` })),
      h('div', { class: 'wf-dur num' + (tone === 'bad' ? ' bad' : '') }, end > start ? fmtDuration(end - start) : '—'));
    toggle.setAttribute('aria-label', (failed ? `${label}, ${failed} failed` : label) + ': show each attempt');
    toggle.addEventListener('click', () => {
      const open = toggle.getAttribute('aria-expanded') !== 'true';
      toggle.setAttribute('aria-expanded', String(open)); toggle.textContent = open ? '▾' : '▸';
      for (const m of members) m.hidden = !open;
    });
    body.push(row, ...members);
    i = j;
  }
  return h('div', { class: 'waterfall', id: 'waterfall', role: 'table', 'aria-label': 'Attempts on a time axis' }, axis, body);
}
