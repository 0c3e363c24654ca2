// Thread detail: summary, hash-chain badge, steps timeline with context and
// attempts, validation results, related threads and the contract graph.
import { h, clear, pill, timeEl, table, alertBox, json, toneOf, copyButton, relTime } from '../ui.js';
import { gql, explain } from '../api.js';
import { link } from '../app.js';
import { drawGraph } from './graph.js';
import { refsText } from './threads.js';

const Q_THREAD = `query Thread($id: ID!) { thread(id: $id) {
  id label contractId contractName contractVersion ownerId status createdBy lastHash refs startedAt completedAt error
  steps { stepName idempotencyKey status retryCount firstSeenAt lastUpdatedAt startedAt finishedAt previousStep actor actorService latestContext verified verificationError
    history(limit: 10) { attempt timestamp status error duration actor actorService context } }
} }`;
const Q_INTEGRITY = `query Integrity($id: String!) { verifyThreadIntegrity(threadId: $id) { verified totalEvents brokenAt error lastVerifiedAt } }`;
const Q_VALIDATIONS = `query Validations($id: ID!) { thread(id: $id) { validationResults(options: { limit: 20 }) {
  validationId stepName idempotencyKey timestamp overallStatus hasCriticalViolation criticalCount warningCount minorCount infoCount totalValidations
  validations { type message field expected actual rule severity } } } }`;
const Q_CHAIN = `query Chain($id: ID!) { threadChain(rootId: $id, maxDepth: 5) { id label contractName status startedAt completedAt } }`;
const Q_GRAPH = `query Graph($name: String!, $version: Int) { contractGraph(name: $name, version: $version) {
  graph { nodes { id owner type next required } entryPoints terminalSteps } transitions { from to maxRetries } } }`;

function stepTone(status) {
  const t = toneOf(status);
  return t === 'neutral' ? 'info' : t;
}

function parseRefs(refs) {
  if (!refs) return {};
  if (typeof refs === 'string') { try { return JSON.parse(refs) || {}; } catch (_) { return {}; } }
  return refs;
}

function integrityBadge(s, withId) {
  const id = withId ? 'integrity-badge' : null;
  if (!s) return pill('integrity unknown', 'neutral');
  if (s.verified) return h('span', { class: 'pill ok', id, title: `${s.totalEvents} events verified at ${s.lastVerifiedAt}` }, `Hash chain verified · ${s.totalEvents} events`);
  return h('span', { class: 'pill bad', id, title: s.error || '' }, 'Hash chain broken');
}

export async function renderThread(ctx) {
  const id = ctx.params[0];
  const [main, integ, vals, chain] = await Promise.allSettled([
    gql(Q_THREAD, { id }), gql(Q_INTEGRITY, { id }), gql(Q_VALIDATIONS, { id }), gql(Q_CHAIN, { id }),
  ]);
  if (main.status === 'rejected') throw main.reason;
  const t = main.value.thread;
  const crumbs = h('div', { class: 'crumbs' }, link('threads', 'Threads'), ' / ', h('span', { class: 'mono' }, id));
  if (!t) {
    return h('div', {}, crumbs, h('div', { class: 'page-head' }, h('h1', {}, 'Thread not found')),
      alertBox('warn', null, 'No thread with this id exists, or you cannot see it.'));
  }
  const integrity = integ.status === 'fulfilled' ? integ.value.verifyThreadIntegrity : null;
  const steps = t.steps || [];
  const refs = parseRefs(t.refs);

  // Summary cards.
  const cards = h('div', { class: 'cards' },
    card('Status', pill(t.status)),
    card('Contract', t.contractName ? h('span', {}, t.contractName, t.contractVersion ? h('span', { class: 'muted' }, ' v' + t.contractVersion) : null) : h('span', { class: 'muted' }, 'free-form')),
    card('Started', h('span', {}, timeEl(t.startedAt), h('div', { class: 'muted', style: 'font-weight:400;font-size:12px' }, relTime(t.startedAt)))),
    card('Completed', timeEl(t.completedAt)),
    card('Steps', String(steps.length)),
    card('Integrity', integrity ? integrityBadge(integrity) : h('span', { class: 'muted' }, integ.status === 'rejected' ? explain(integ.reason) : '—')));

  const details = h('section', { class: 'panel', 'aria-labelledby': 'det-h' }, h('h2', { id: 'det-h' }, 'Details'),
    h('div', { class: 'panel-body' }, h('dl', { class: 'kv' },
      kv('Thread ID', h('span', { class: 'row' }, h('code', {}, t.id), copyButton(t.id, 'Copy thread id'))),
      t.label ? kv('Label', t.label) : null,
      kv('Owner', h('code', {}, t.ownerId || '—')),
      t.createdBy ? kv('Created by', h('code', {}, t.createdBy)) : null,
      kv('Refs', refsText(refs) ? h('code', {}, refsText(refs)) : h('span', { class: 'muted' }, 'none')),
      kv('Last hash', t.lastHash ? h('code', { class: 'truncate', title: t.lastHash }, t.lastHash) : '—'),
      integrity && !integrity.verified ? kv('Integrity error', h('span', { style: 'color:var(--bad)' }, integrity.error || 'the stored chain does not verify', integrity.brokenAt ? ` (at ${integrity.brokenAt})` : '')) : null,
      t.error ? kv('Error', h('span', { style: 'color:var(--bad)' }, t.error)) : null)));

  // Steps timeline.
  const timeline = h('ol', { class: 'timeline', id: 'steps-timeline', 'aria-label': 'Steps in the order they were first seen' },
    steps.map((s) => {
      const tone = stepTone(s.status);
      const hist = s.history || [];
      return h('li', { 'data-step': s.stepName },
        h('span', { class: 'dot ' + tone, 'aria-hidden': 'true' }),
        h('div', { class: 'step-head' }, h('span', { class: 'name' }, s.stepName), pill(s.status),
          s.idempotencyKey && s.idempotencyKey !== s.stepName ? h('code', { class: 'muted', title: 'idempotency key' }, s.idempotencyKey) : null,
          s.retryCount ? pill(`${s.retryCount} ${s.retryCount === 1 ? 'retry' : 'retries'}`, 'warn') : null,
          s.verified === false ? pill('unverified', 'bad') : null),
        h('div', { class: 'step-meta' }, [
          s.actor || s.actorService ? `by ${[s.actor, s.actorService].filter(Boolean).join(' / ')}` : null,
          `first seen ${new Date(s.firstSeenAt).toLocaleString()}`,
          s.finishedAt ? `finished ${new Date(s.finishedAt).toLocaleString()}` : null,
          s.previousStep ? `after ${s.previousStep}` : null,
        ].filter(Boolean).join(' · ')),
        s.latestContext && s.latestContext !== '{}' ? h('details', { class: 'history' }, h('summary', {}, 'Context'), json(s.latestContext)) : null,
        hist.length ? h('details', { class: 'history' }, h('summary', {}, `Attempts (${hist.length})`),
          table([
            { label: '#', render: (a) => String(a.attempt) },
            { label: 'Status', render: (a) => pill(a.status) },
            { label: 'At', render: (a) => timeEl(a.timestamp) },
            { label: 'Duration', render: (a) => a.duration ? a.duration + ' ms' : '—' },
            { label: 'Actor', render: (a) => [a.actor, a.actorService].filter(Boolean).join(' / ') || '—' },
            { label: 'Error', render: (a) => a.error ? h('span', { style: 'color:var(--bad)' }, a.error) : '—' },
          ], hist, { caption: `Attempts of ${s.stepName}` })) : null);
    }));
  const stepsPanel = h('section', { class: 'panel', 'aria-labelledby': 'steps-h' }, h('h2', { id: 'steps-h' }, `Steps timeline (${steps.length})`),
    h('div', { class: 'panel-body' }, steps.length ? timeline : h('div', { class: 'empty' }, 'No steps recorded yet.')));

  // Validation results.
  let valBody;
  if (vals.status === 'rejected') valBody = alertBox('bad', 'Could not load validation results', explain(vals.reason));
  else {
    const rs = (vals.value.thread && vals.value.thread.validationResults) || [];
    valBody = rs.length ? table([
      { label: 'Step', render: (r) => h('span', {}, r.stepName, r.idempotencyKey && r.idempotencyKey !== r.stepName ? h('code', { class: 'muted' }, ' ' + r.idempotencyKey) : null) },
      { label: 'Result', render: (r) => pill(r.overallStatus, r.hasCriticalViolation ? 'bad' : undefined) },
      { label: 'Issues', render: (r) => r.validations.length ? h('ul', { style: 'margin:0;padding-left:18px' }, r.validations.map((v) =>
        h('li', {}, h('strong', {}, v.type), v.severity ? ` (${v.severity})` : '', ': ', v.message,
          v.expected || v.actual ? h('span', { class: 'muted' }, ` expected ${v.expected || '—'}, got ${v.actual || '—'}`) : null))) : h('span', { class: 'muted' }, 'none') },
      { label: 'Counts', render: (r) => `${r.criticalCount} critical · ${r.warningCount} warning · ${r.totalValidations} total` },
      { label: 'At', render: (r) => timeEl(r.timestamp) },
    ], rs, { caption: 'Validation results' }) : h('div', { class: 'empty' }, t.contractName ? 'No validation results for this thread.' : 'Free-form threads are not validated against a contract.');
  }
  const valPanel = h('section', { class: 'panel', 'aria-labelledby': 'val-h', id: 'validation-panel' }, h('h2', { id: 'val-h' }, 'Validation results'), valBody);

  // Related threads (chain).
  let chainBody;
  if (chain.status === 'rejected') chainBody = h('div', { class: 'panel-body' }, alertBox('bad', 'Could not load related threads', explain(chain.reason)));
  else {
    const list = chain.value.threadChain || [];
    chainBody = list.length > 1 ? h('ol', { class: 'timeline', style: 'padding:16px', id: 'thread-chain' }, list.map((c) => h('li', {},
      h('span', { class: 'dot ' + stepTone(c.status), 'aria-hidden': 'true' }),
      h('div', { class: 'step-head' }, c.id === t.id ? h('strong', { class: 'mono' }, c.label || c.id, ' (this thread)') : link('threads/' + encodeURIComponent(c.id), c.label || c.id, { class: 'mono' }), pill(c.status)),
      h('div', { class: 'step-meta' }, [c.contractName, c.startedAt ? 'started ' + new Date(c.startedAt).toLocaleString() : null].filter(Boolean).join(' · ')))))
      : h('div', { class: 'empty' }, 'No linked threads (refs named linkedThread:*).');
  }
  const chainPanel = h('section', { class: 'panel', 'aria-labelledby': 'chain-h' }, h('h2', { id: 'chain-h' }, 'Related threads'), chainBody);

  // Contract graph (loaded after the rest so a slow or missing contract does not block the page).
  const graphPanel = h('section', { class: 'panel', 'aria-labelledby': 'graph-h', id: 'graph-panel' }, h('h2', { id: 'graph-h' }, 'Contract graph'));
  const graphBody = h('div', { class: 'graph-wrap' }, h('p', { class: 'loading' }, t.contractName ? 'Loading contract…' : ''));
  graphPanel.appendChild(graphBody);
  const statusMap = new Map(steps.map((s) => [s.stepName, stepTone(s.status) === 'warn' ? 'info' : stepTone(s.status)]));
  if (t.contractName) {
    gql(Q_GRAPH, { name: t.contractName, version: t.contractVersion || null }).then((d) => {
      clear(graphBody);
      const cg = d.contractGraph;
      if (!cg || !cg.graph || !cg.graph.nodes.length) { graphBody.appendChild(h('div', { class: 'empty' }, 'The contract has no steps.')); return; }
      graphBody.appendChild(drawGraph(cg.graph, cg.transitions, statusMap, `Contract ${t.contractName} v${t.contractVersion || 'latest'}`));
      graphPanel.appendChild(h('div', { class: 'graph-legend', 'aria-hidden': 'true' },
        h('span', { style: '--c: var(--ok)' }, 'completed'), h('span', { style: '--c: var(--bad)' }, 'failed'),
        h('span', { style: '--c: var(--info)' }, 'in progress'), h('span', { style: '--c: var(--border)' }, 'not reached'),
        h('span', {}, 'dashed = retry / loop')));
    }).catch((e) => { clear(graphBody).appendChild(alertBox('bad', 'Could not load the contract graph', explain(e))); });
  } else {
    // A free-form thread has no contract; draw the observed step order instead.
    clear(graphBody);
    if (steps.length) {
      const nodes = steps.map((s, i) => ({ id: s.stepName, type: 'observed', next: steps[i + 1] && steps[i + 1].stepName !== s.stepName ? [steps[i + 1].stepName] : [] }));
      const uniq = []; const seen = new Set();
      for (const n of nodes) if (!seen.has(n.id)) { seen.add(n.id); uniq.push(n); }
      graphBody.appendChild(h('p', { class: 'muted', style: 'margin:4px 8px 8px' }, 'Free-form thread: the picture shows the observed step order.'));
      graphBody.appendChild(drawGraph({ nodes: uniq, entryPoints: [uniq[0].id], terminalSteps: [] }, [], statusMap, 'Observed step order'));
    } else graphBody.appendChild(h('div', { class: 'empty' }, 'No steps yet.'));
  }

  return h('div', {}, crumbs,
    h('div', { class: 'page-head' }, h('div', {}, h('h1', { class: 'mono', style: 'font-size:19px;overflow-wrap:anywhere' }, t.label || t.id),
      h('p', { class: 'desc' }, t.contractName ? `Thread of contract ${t.contractName}` : 'Free-form thread')),
      integrity ? integrityBadge(integrity, true) : null),
    cards, stepsPanel, graphPanel, valPanel, chainPanel, details);
}

function card(k, v) { return h('div', { class: 'card' }, h('div', { class: 'k' }, k), h('div', { class: 'v' }, v)); }
function kv(k, v) { return [h('dt', {}, k), h('dd', {}, v)]; }
