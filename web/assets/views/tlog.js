// The transparency log in the UI: the latest signed checkpoint (public,
// text/plain) read as the spec says (docs/integrators/verification.md):
// origin, size, root hash, then "— <key name> <signature>" lines.
import { h } from '../ui.js';
import { getApiBase } from '../api.js';

export async function latestCheckpoint() {
  const res = await fetch(getApiBase() + '/v1/log/checkpoint', { credentials: 'same-origin', cache: 'no-store' });
  if (!res.ok) throw new Error('checkpoint: HTTP ' + res.status);
  const text = await res.text();
  const [body, sigs] = text.split('\n\n');
  const lines = body.split('\n');
  const signers = (sigs || '').split('\n').filter((l) => l.startsWith('\u2014 ')).map((l) => l.slice(2).split(' ')[0]);
  return { origin: lines[0], size: Number(lines[1]), root: lines[2], signers, text };
}

// logCard: where the thread's steps are in the log (hashChainStatus.log).
export function logCard(log, cp, threadId) {
  if (!log || !cp) return h('span', { class: 'muted' }, '—');
  if (log.lastIndex === null || log.lastIndex === undefined) return h('span', { class: 'muted', id: 'log-inclusion' }, log.unlogged ? 'older steps not logged yet' : 'no steps logged yet');
  const included = cp.size > log.lastIndex;
  return h('span', { id: 'log-inclusion', class: 'small', style: 'font-weight:normal;overflow-wrap:anywhere', title: `log ${cp.origin}, root ${cp.root}` },
    included ? `Included in checkpoint ${cp.size}, signed by ${cp.signers.join(', ') || 'unknown key'}` : `Logged at index ${log.lastIndex}, awaiting the next checkpoint`,
    ' · ', h('a', { href: getApiBase() + '/v1/threads/' + encodeURIComponent(threadId) + '/export', download: 'thread-' + threadId + '.json', id: 'export-proofs' }, 'export with proofs'));
}

// overviewCard: the log's size and latest checkpoint.
export function overviewCard(cp) {
  return h('div', { class: 'card', id: 'log-card' }, h('div', { class: 'k' }, 'Transparency log'),
    h('div', { class: 'v', id: 'log-size', title: cp ? cp.text : '' }, cp ? `${cp.size} entries` : '—'),
    cp ? h('div', { class: 'muted small' }, `checkpoint ${cp.size} · `, h('a', { href: getApiBase() + '/v1/log/checkpoint', target: '_blank' }, 'signed'), ` by ${cp.signers.join(', ')}`) : null);
}
