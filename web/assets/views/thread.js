// Thread page: a banner saying how the thread ended and why, then a
// waterfall of attempts on a time axis, the steps with their own validation
// state, the contract graph with the path taken, validation results, linked
// threads (both directions) and details. Long lists load a page at a time and
// say how much is shown. The page refreshes itself while the thread changes.
import { h, add, clear, pill, table, alertBox, json, copyButton } from '../ui.js';
import { gql, explain } from '../api.js';
import { link, onMissingFragment } from '../app.js';
import { drawGraph, graphViewport } from './graph.js';
import { refsText } from './threads.js';
import { threadActions } from './ops.js';
import { healthBadge, statusPill, fmtDuration, fmtDateTime, timeTag, tzToggle, soFar } from '../fmt.js';
import { drawWaterfall, stepDomId } from './waterfall.js';
import { latestCheckpoint, logCard } from './tlog.js';

// Page sizes keep each request under the query cost limit (1000 points).
const STEP_PAGE = 20, ATTEMPT_PAGE = 60, VAL_PAGE = 20, HIST_PAGE = 20;
const POLL_MS = 4000;

const Q_THREAD = `query Thread($id: ID!) { thread(id: $id) {
  id label contractId contractName contractVersion ownerId status createdBy lastHash refs startedAt completedAt error endReason
  tags durationMs attemptCount stepCount validationCount
  health { status failedSteps critical major warnings firstIssue { stepName idempotencyKey type message severity } } } }`;
const STEP_FIELDS = `stepName idempotencyKey status retryCount firstSeenAt startedAt finishedAt previousStep actor actorService latestContext verified
  latestValidation { overallStatus validations { type message severity } }
  subSteps { name status }`;
// One row per step name (the first-seen identity of each); a name repeated
// under many keys is a group that expands to its identities.
const Q_STEPS = `query Steps($id: ID!, $offset: Int) { thread(id: $id) { steps(firstOfEachName: true, limit: ${STEP_PAGE}, offset: $offset) { ${STEP_FIELDS} } } }`;
const Q_GROUP_STEPS = `query GroupSteps($id: ID!, $name: String!, $offset: Int) { thread(id: $id) { steps(stepName: $name, limit: ${STEP_PAGE}, offset: $offset) { ${STEP_FIELDS} } } }`;
const Q_ONE_STEP = `query OneStep($id: ID!, $name: String!, $key: String!) { thread(id: $id) { steps(stepName: $name, idempotencyKey: $key, limit: 1) { ${STEP_FIELDS} } } }`;
const Q_GROUPS = `query Groups($id: ID!) { thread(id: $id) { stepGroups { stepName steps failed succeeded firstSeenAt previousSteps } } }`;
const Q_ATTEMPTS = `query Attempts($id: ID!, $offset: Int) { thread(id: $id) { attempts(limit: ${ATTEMPT_PAGE}, offset: $offset) {
  stepId stepName idempotencyKey attempt status validation timestamp startedAt finishedAt duration error metadata actor } } }`;
const Q_HISTORY = `query History($t: String!, $s: String!, $k: String, $offset: Int) { stepHistory(threadId: $t, stepName: $s, idempotencyKey: $k, limit: ${HIST_PAGE}, offset: $offset) {
  attempt timestamp status validation error duration actor actorService metadata } }`;
const Q_INTEGRITY = `query Integrity($id: String!) { verifyThreadIntegrity(threadId: $id) { verified code totalEvents brokenAt error lastVerifiedAt brokenStepName brokenIdempotencyKey log { leaves unlogged lastIndex } } }`;
const Q_VALIDATIONS = `query Validations($id: ID!, $offset: Int) { thread(id: $id) { validationResults(options: { limit: ${VAL_PAGE}, offset: $offset }) {
  validationId stepName idempotencyKey timestamp overallStatus hasCriticalViolation criticalCount warningCount minorCount infoCount totalValidations
  validations { type message field expected actual rule severity } } } }`;
const Q_LINKS = `query Links($id: ID!) { thread(id: $id) {
  threadChain(maxDepth: 5) { id label contractName status startedAt health { status } }
  linkedFrom { id label contractName status startedAt health { status } } } }`;
const Q_GRAPH = `query Graph($name: String!, $version: Int) { contractGraph(name: $name, version: $version) {
  graph { nodes { id owner type next required } entryPoints terminalSteps } transitions { from to maxRetries } } }`;
const Q_ACTORS = `query Actors($ids: [String!]!) { resolveActors(ids: $ids) { id name type } }`;
const Q_POLL = `query Poll($id: ID!) { thread(id: $id) { status attemptCount lastHash health { status } } }`;

function parseRefs(refs) {
  if (!refs) return {};
  if (typeof refs === 'string') { try { return JSON.parse(refs) || {}; } catch (_) { return {}; } }
  return refs;
}
function parseJSON(s) { if (!s) return {}; try { return JSON.parse(s) || {}; } catch (_) { return {}; } }
const ok = (s) => s === 'success' || s === 'completed';
const bad = (s) => s === 'failed' || s === 'error';
const stepKeyOf = (name, key) => name + '\u0000' + key;

// runTone combines a run status and its validation (passed, warning,
// violated): a violated step or attempt is never green.
function runTone(status, validation) {
  if (bad(status) || validation === 'violated') return 'bad';
  if (validation === 'warning') return 'warn';
  if (ok(status)) return 'ok';
  return 'info';
}
function stepTone(s) { return runTone(s.status, s.latestValidation && s.latestValidation.overallStatus); }
// runPill shows the run status; green only when the contract did not object.
function runPill(status, validation) {
  const tone = runTone(status, validation);
  return h('span', { class: 'pill ' + (bad(status) ? 'bad' : tone === 'ok' ? 'ok' : tone === 'info' ? 'info' : 'neutral'), 'data-run': status,
    title: validation === 'violated' ? 'recorded as ' + status + ', but it broke the contract' : validation === 'warning' ? 'recorded as ' + status + ', with warnings' : null }, status);
}

function endedLabel(status) {
  return { completed: 'Completed', failed: 'Failed', cancelled: 'Cancelled', closed: 'Closed' }[status] || 'Ended';
}

export async function renderThread(ctx) {
  const id = ctx.params[0];
  const page = h('div', { id: 'thread-page' });
  const first = await build(id, page, ctx);
  if (!first) return page;
  // Live: poll a cheap summary; rebuild in place when the thread moved on.
  let sig = first;
  const timer = setInterval(async () => {
    if (!ctx.isCurrent() || !document.body.contains(page)) { if (!ctx.isCurrent()) clearInterval(timer); return; }
    if (document.hidden) return;
    try {
      const d = await gql(Q_POLL, { id });
      const t = d.thread;
      const now = t ? [t.status, t.attemptCount, t.lastHash, t.health.status].join('|') : '';
      if (now && now !== sig) {
        const y = window.scrollY;
        const next = h('div', {});
        const s2 = await build(id, next, ctx);
        if (s2 && ctx.isCurrent()) {
          sig = s2;
          clear(page); while (next.firstChild) page.appendChild(next.firstChild);
          window.scrollTo(0, y);
          const note = page.querySelector('#live-note');
          if (note) note.textContent = 'Updated ' + fmtDateTime(new Date().toISOString());
        }
      }
    } catch (_) { /* the next poll retries */ }
  }, POLL_MS);
  return page;
}

// build renders the page into root; it returns the live signature, or '' when
// the thread does not exist.
async function build(id, root, ctx) {
  const [main, stepsR, attemptsR, integ, vals, links, cpR, groupsR] = await Promise.allSettled([
    gql(Q_THREAD, { id }), gql(Q_STEPS, { id, offset: 0 }), gql(Q_ATTEMPTS, { id, offset: 0 }), gql(Q_INTEGRITY, { id }),
    gql(Q_VALIDATIONS, { id, offset: 0 }), gql(Q_LINKS, { id }), latestCheckpoint(), gql(Q_GROUPS, { id }),
  ]);
  const checkpoint = cpR.status === 'fulfilled' ? cpR.value : null;
  if (main.status === 'rejected') throw main.reason;
  const t = main.value.thread;
  const crumbs = h('div', { class: 'crumbs' }, link('threads', 'Threads'), ' / ', h('span', { class: 'mono' }, id));
  if (!t) {
    add(root, crumbs, h('div', { class: 'page-head' }, h('h1', {}, 'Thread not found')),
      alertBox('warn', null, 'No thread with this id exists, or you cannot see it.'));
    return '';
  }
  const steps = stepsR.status === 'fulfilled' && stepsR.value.thread ? stepsR.value.thread.steps : [];
  const groups = groupsR.status === 'fulfilled' && groupsR.value.thread ? groupsR.value.thread.stepGroups : [];
  const edges = groups.flatMap((g) => (g.previousSteps || []).map((p) => ({ from: p, to: g.stepName })));
  const groupOf = new Map(groups.map((g) => [g.stepName, g]));
  const attempts = attemptsR.status === 'fulfilled' && attemptsR.value.thread ? attemptsR.value.thread.attempts : [];
  const integrity = integ.status === 'fulfilled' ? integ.value.verifyThreadIntegrity : null;
  const refs = parseRefs(t.refs);

  // Actor names, one request for every id on the page.
  const ids = [...new Set([t.ownerId, t.createdBy, ...steps.map((s) => s.actor), ...attempts.map((a) => a.actor)].filter(Boolean))].slice(0, 100);
  const names = new Map();
  if (ids.length) {
    try { for (const a of (await gql(Q_ACTORS, { ids })).resolveActors) names.set(a.id, a); } catch (_) { /* ids stay shown as they are */ }
  }
  const actor = (idv, svc) => {
    if (!idv && !svc) return null;
    const a = names.get(idv);
    const who = a ? h('span', { title: idv }, a.name || idv, h('span', { class: 'muted' }, a.type === 'service_account' ? ' (service account)' : '')) : h('code', { title: 'not a known user or service account' }, idv || '');
    return h('span', { class: 'actor' }, idv ? who : null, svc ? h('span', { class: 'muted' }, (idv ? ' via ' : '') + svc) : null);
  };

  // Last attempt of each step (message, error, metadata) from the waterfall page.
  const lastAttempt = new Map();
  for (const a of attempts) lastAttempt.set(stepKeyOf(a.stepName, a.idempotencyKey), a);

  // --- Banner: outcome and the first critical issue, above the fold.
  const hh = t.health;
  const is = hh.firstIssue;
  const outcome = {
    FAILED: t.status === 'failed' ? 'This thread failed' : 'A step of this thread failed',
    VIOLATED: 'This thread broke its contract',
    WARNING: 'This thread ran with warnings',
    OK: t.status === 'active' ? 'This thread is running without problems so far' : t.status === 'cancelled' ? 'This thread was cancelled' : 'This thread completed without problems',
  }[hh.status];
  // A step signed with a key this installation lacks is unknown, not altered.
  const altered = !!(integrity && !integrity.verified && integrity.code !== 'unknown_key');
  const title = altered && hh.status === 'OK' ? 'The recorded data of this thread was altered' : outcome;
  const tone = altered ? 'bad' : hh.status === 'OK' ? (t.status === 'cancelled' ? 'warn' : t.status === 'active' ? 'info' : 'ok') : hh.status === 'WARNING' ? 'warn' : 'bad';
  const banner = h('section', { class: 'outcome ' + tone, id: 'thread-banner', role: hh.status === 'OK' ? 'status' : 'alert' },
    h('div', { class: 'outcome-head' }, healthBadge(hh), statusPill(t.status), h('strong', { class: 'outcome-title' }, title)),
    is ? h('div', { class: 'outcome-issue', id: 'first-issue' },
      h('span', { class: 'k' }, is.type === 'step_failed' ? 'First failure' : 'First ' + (is.severity || 'critical') + ' issue'), ' at step ',
      h('a', { href: '#' + (is.idempotencyKey != null ? stepDomId(is.stepName, is.idempotencyKey) : 'group-' + encodeURIComponent(is.stepName)), class: 'mono', id: 'first-issue-link' }, is.stepName),
      is.idempotencyKey && is.idempotencyKey !== is.stepName && (groupOf.get(is.stepName) || { steps: 1 }).steps > 1 ? h('code', { class: 'muted', title: 'idempotency key' }, ' ' + is.idempotencyKey) : null, ': ',
      h('span', { class: 'msg' }, is.message), h('span', { class: 'muted' }, ` (${is.type.replace(/_/g, ' ')})`)) : null,
    // A cancel reason is what the caller said, not a failure.
    t.status === 'cancelled' && (t.endReason || t.error) ? h('div', { class: 'outcome-issue' }, h('span', { class: 'k' }, 'End reason'), ' ', h('span', { id: 'end-reason' }, 'cancelled: ' + (t.endReason || t.error))) : null,
    t.status === 'failed' && t.error && !(is && is.message === t.error) ? h('div', { class: 'outcome-issue', id: 'fail-reason' }, h('span', { class: 'k' }, 'Failed because'), ' ', t.error) : null,
    hh.status !== 'OK' ? h('div', { class: 'muted small' }, [hh.failedSteps ? `${hh.failedSteps} step${hh.failedSteps === 1 ? '' : 's'} left failed` : null,
      hh.critical ? `${hh.critical} critical` : null, hh.major ? `${hh.major} major` : null, hh.warnings ? `${hh.warnings} warning${hh.warnings === 1 ? '' : 's'}` : null].filter(Boolean).join(' · ')) : null,
    altered ? h('div', { class: 'outcome-issue', id: 'chain-broken' }, h('span', { class: 'k' }, 'Tampering'), ' the recorded data of step ',
      integrity.brokenStepName ? h('a', { href: '#' + stepDomId(integrity.brokenStepName, integrity.brokenIdempotencyKey || ''), class: 'mono' }, integrity.brokenStepName) : 'unknown',
      ' no longer matches its hash (', integrity.error || 'chain does not verify', ').') : null);

  const cards = h('div', { class: 'cards' },
    card('Contract', t.contractName ? link('contracts/' + encodeURIComponent(t.contractName) + (t.contractVersion ? '/' + t.contractVersion : ''), t.contractName + (t.contractVersion ? ' v' + t.contractVersion : '')) : h('span', { class: 'muted' }, 'free-form')),
    card('Started', timeTag(t.startedAt)),
    card(t.completedAt ? endedLabel(t.status) : 'Ended', t.completedAt ? timeTag(t.completedAt) : h('span', { class: 'muted' }, 'still running')),
    // A running thread has run until now, not until its last step.
    card('Duration', h('span', { id: 'thread-duration', title: t.status === 'active' ? 'from its start to now' : null }, fmtDuration(t.status === 'active' ? soFar(t) : t.durationMs), t.status === 'active' ? h('span', { class: 'muted small' }, ' so far') : null)),
    card('Steps', h('span', { id: 'step-counts' }, `${t.stepCount} step${t.stepCount === 1 ? '' : 's'} · ${t.attemptCount} attempt${t.attemptCount === 1 ? '' : 's'}`)),
    card('Integrity', integrity ? integrityBadge(integrity) : h('span', { class: 'muted' }, integ.status === 'rejected' ? explain(integ.reason) : '—')),
    card('Transparency log', logCard(integrity && integrity.log, checkpoint, t.id)));

  // --- Waterfall of attempts.
  const wf = h('div', { class: 'panel-body', id: 'waterfall-body' });
  const wfCount = h('span', { class: 'muted', id: 'attempts-count' });
  const allAttempts = attempts.slice();
  const brokenKey = altered && integrity.brokenStepName ? stepKeyOf(integrity.brokenStepName, integrity.brokenIdempotencyKey || '') : null;
  const drawWf = () => {
    clear(wf).appendChild(attemptsR.status === 'rejected' ? alertBox('bad', 'Could not load the attempts', explain(attemptsR.reason)) : drawWaterfall(allAttempts, { threadStart: t.startedAt, tone: (a) => runTone(a.status, a.validation), altered: (a) => brokenKey === stepKeyOf(a.stepName, a.idempotencyKey || '') }));
    wfCount.textContent = `showing ${allAttempts.length} of ${t.attemptCount} attempts`;
    if (allAttempts.length < t.attemptCount) {
      const more = h('button', { type: 'button', class: 'btn-sm', id: 'more-attempts' }, `Load ${Math.min(ATTEMPT_PAGE, t.attemptCount - allAttempts.length)} more attempts`);
      more.addEventListener('click', async () => {
        more.disabled = true;
        try { const d = await gql(Q_ATTEMPTS, { id, offset: allAttempts.length }); allAttempts.push(...d.thread.attempts); drawWf(); } catch (e) { more.replaceWith(alertBox('bad', 'Could not load attempts', explain(e))); }
      });
      wf.appendChild(h('div', { class: 'load-more' }, more));
    }
  };
  drawWf();
  const wfPanel = h('section', { class: 'panel', 'aria-labelledby': 'wf-h', id: 'waterfall-panel' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'wf-h' }, 'Timeline'), wfCount), wf);

  // --- Steps.
  const stepItem = (s) => {
    const v = s.latestValidation;
    const last = lastAttempt.get(stepKeyOf(s.stepName, s.idempotencyKey));
    const meta = last ? parseJSON(last.metadata) : {};
    const message = (last && last.error) || (typeof meta.message === 'string' ? meta.message : '');
    const hist = h('div', {});
    const attemptsBox = h('details', { class: 'history' }, h('summary', {}, `Attempts (${s.retryCount + 1})`), hist);
    let loaded = [];
    const loadHist = async () => {
      const d = await gql(Q_HISTORY, { t: id, s: s.stepName, k: s.idempotencyKey, offset: loaded.length });
      loaded = loaded.concat(d.stepHistory);
      clear(hist).appendChild(table([
        { label: '#', render: (a) => String(a.attempt) },
        { label: 'Status', render: (a) => h('span', {}, runPill(a.status, a.validation), a.validation && a.validation !== 'passed' ? [' ', pill(a.validation, a.validation === 'violated' ? 'bad' : 'warn')] : null) },
        { label: 'At', render: (a) => timeTag(a.timestamp) },
        { label: 'Duration', render: (a) => a.duration ? fmtDuration(a.duration) : '—' },
        { label: 'Actor', render: (a) => actor(a.actor, a.actorService) || '—' },
        { label: 'Error', render: (a) => a.error ? h('span', { class: 'reason bad' }, a.error) : '—' },
      ], loaded, { caption: `Attempts of ${s.stepName}` }));
      hist.appendChild(h('div', { class: 'muted small' }, `showing ${loaded.length} of ${s.retryCount + 1} attempts`));
      if (loaded.length < s.retryCount + 1) {
        const more = h('button', { type: 'button', class: 'btn-sm' }, 'Load more attempts');
        more.addEventListener('click', () => loadHist());
        hist.appendChild(more);
      }
    };
    attemptsBox.addEventListener('toggle', () => { if (attemptsBox.open && !loaded.length) loadHist().catch((e) => clear(hist).appendChild(alertBox('bad', 'Could not load attempts', explain(e)))); });
    const tone = stepTone(s);
    const tampered = brokenKey === stepKeyOf(s.stepName, s.idempotencyKey);
    return h('li', { 'data-step': s.stepName, 'data-key': s.idempotencyKey, 'data-status': s.status, id: stepDomId(s.stepName, s.idempotencyKey), class: tampered ? 'tampered' : '' },
      h('span', { class: 'dot ' + (tampered ? 'bad' : tone), 'aria-hidden': 'true' }),
      h('div', { class: 'step-head' }, h('span', { class: 'name' }, s.stepName), runPill(s.status, v && v.overallStatus),
        v ? h('span', { class: 'pill ' + ({ passed: 'ok', warning: 'warn', violated: 'bad' }[v.overallStatus] || 'neutral'), 'data-validation': v.overallStatus }, v.overallStatus === 'passed' ? 'contract ok' : v.overallStatus) : null,
        s.idempotencyKey && s.idempotencyKey !== s.stepName ? h('code', { class: 'muted', title: 'idempotency key' }, s.idempotencyKey) : null,
        s.retryCount ? pill(`${s.retryCount} ${s.retryCount === 1 ? 'retry' : 'retries'}`, 'warn') : null,
        tampered ? h('span', { class: 'pill bad', id: 'tampered-step' }, 'altered: hash mismatch') : null),
      h('div', { class: 'step-meta' }, [
        s.actor || s.actorService ? h('span', {}, 'by ', actor(s.actor, s.actorService)) : null,
        h('span', {}, 'first seen ', fmtDateTime(s.firstSeenAt)),
        s.startedAt && s.finishedAt ? h('span', {}, 'took ', fmtDuration(new Date(s.finishedAt) - new Date(s.startedAt))) : null,
        s.previousStep ? h('span', {}, 'after ', h('code', {}, s.previousStep)) : null,
      ].filter(Boolean).map((x, i) => i ? [' · ', x] : x)),
      message ? h('div', { class: 'step-msg ' + (bad(s.status) ? 'bad' : '') }, message) : null,
      v && v.validations.filter((x) => x.severity !== 'info').length ? h('ul', { class: 'issues' }, v.validations.filter((x) => x.severity !== 'info').map((x) =>
        h('li', { class: 'sev-' + x.severity }, h('strong', {}, x.type.replace(/_/g, ' ')), ` (${x.severity}): `, x.message))) : null,
      s.subSteps.length ? h('div', { class: 'substeps' }, h('span', { class: 'muted small' }, `Sub-steps (${s.subSteps.length})`),
        h('ul', {}, s.subSteps.map((ss) => h('li', {}, pill(ss.status), ' ', h('span', { class: 'mono' }, ss.name))))) : null,
      s.latestContext && s.latestContext !== '{}' ? h('details', { class: 'history' }, h('summary', {}, 'Context'), json(s.latestContext)) : null,
      attemptsBox);
  };
  // One row per step name; a name repeated under several keys is a group
  // "pick_item × 58 (1 failed)" that expands to its identities, a page at a
  // time. The problem step is loaded into its group whatever its position.
  const allSteps = steps.slice();
  const shownKeys = new Set();
  const groupItems = new Map(); // step name → { li, list, loaded, more }
  const groupItem = (g, first) => {
    const list = h('ol', { class: 'timeline group-steps', 'aria-label': `Steps named ${g.stepName}` });
    const det = h('details', { class: 'step-group-body' });
    const tone = g.failed ? 'bad' : g.succeeded === g.steps ? 'ok' : 'info';
    const sum = h('summary', {}, h('span', { class: 'name' }, `${g.stepName} × ${g.steps}`),
      g.failed ? h('span', { class: 'pill bad' }, `${g.failed} failed`) : null,
      g.succeeded ? h('span', { class: 'pill ok' }, `${g.succeeded} succeeded`) : null,
      g.steps - g.failed - g.succeeded > 0 ? h('span', { class: 'pill info' }, `${g.steps - g.failed - g.succeeded} other`) : null);
    const moreBox = h('div', { class: 'load-more' });
    add(det, sum, list, moreBox);
    const li = h('li', { class: 'step-group', id: 'group-' + encodeURIComponent(g.stepName), 'data-group': g.stepName, 'data-count': String(g.steps) },
      h('span', { class: 'dot ' + tone, 'aria-hidden': 'true' }), det);
    const st = { li, det, list, loaded: 0, g };
    const drawMore = () => {
      clear(moreBox);
      if (st.loaded >= g.steps) return;
      const more = h('button', { type: 'button', class: 'btn-sm' }, `Load ${Math.min(STEP_PAGE, g.steps - st.loaded)} more of ${g.steps - st.loaded} ${g.stepName}`);
      more.addEventListener('click', () => loadPage().catch((e) => moreBox.replaceChildren(alertBox('bad', 'Could not load steps', explain(e)))));
      moreBox.appendChild(more);
    };
    const loadPage = async () => {
      const d = await gql(Q_GROUP_STEPS, { id, name: g.stepName, offset: st.loaded });
      const got = (d.thread && d.thread.steps) || [];
      st.loaded += got.length;
      for (const x of got) {
        const k = stepKeyOf(x.stepName, x.idempotencyKey);
        if (shownKeys.has(k)) continue;
        shownKeys.add(k); list.appendChild(stepItem(x));
      }
      if (!got.length) st.loaded = g.steps;
      drawMore();
    };
    st.loadPage = loadPage;
    det.addEventListener('toggle', () => { if (det.open && !st.loaded) loadPage().catch((e) => moreBox.replaceChildren(alertBox('bad', 'Could not load steps', explain(e)))); });
    void first;
    groupItems.set(g.stepName, st);
    return li;
  };
  const rowFor = (s) => {
    const g = groupOf.get(s.stepName);
    if (g && g.steps > 1) return groupItem(g, s);
    shownKeys.add(stepKeyOf(s.stepName, s.idempotencyKey));
    return stepItem(s);
  };
  const timeline = h('ol', { class: 'timeline', id: 'steps-timeline', 'aria-label': 'Steps in the order they were first seen' }, allSteps.map(rowFor));
  // Names repeat: count step names; else (or past the groups read) steps.
  const inGroups = groups.reduce((a, g) => a + g.steps, 0);
  const repeats = groups.some((g) => g.steps > 1) && inGroups === t.stepCount;
  const nameCount = repeats ? groups.length : t.stepCount;
  const countText = () => repeats ? `showing ${allSteps.length} of ${nameCount} step names (${t.stepCount} steps)` : `showing ${allSteps.length} of ${t.stepCount}`;
  const stepCount = h('span', { class: 'muted', id: 'steps-count' }, countText());
  const stepsBody = h('div', { class: 'panel-body' }, allSteps.length ? timeline : h('div', { class: 'empty' }, 'No steps recorded yet.'));
  const loadMoreNames = async () => {
    const d = await gql(Q_STEPS, { id, offset: allSteps.length });
    const got = d.thread.steps;
    for (const s of got) { allSteps.push(s); timeline.appendChild(rowFor(s)); }
    stepCount.textContent = countText();
    return got.length;
  };
  if (allSteps.length < nameCount) {
    const more = h('button', { type: 'button', class: 'btn-sm', id: 'more-steps' }, 'Load more steps');
    more.addEventListener('click', async () => {
      more.disabled = true;
      try {
        const n = await loadMoreNames();
        more.disabled = !n || allSteps.length >= nameCount;
        if (more.disabled) more.remove();
      } catch (e) { more.replaceWith(alertBox('bad', 'Could not load steps', explain(e))); }
    });
    stepsBody.appendChild(h('div', { class: 'load-more', id: 'more-steps-box' }, more));
  }
  // revealStep loads one step identity wherever it is (a group not opened,
  // a name past the loaded pages) and returns its element.
  const revealStep = async (name, key) => {
    const domId = stepDomId(name, key);
    let el = stepsBody.querySelector('[id="' + CSS.escape(domId) + '"]');
    if (el) { const d = el.closest('details'); if (d) d.open = true; return el; }
    const d = await gql(Q_ONE_STEP, { id, name, key });
    const s = d.thread && d.thread.steps[0];
    if (!s) return null;
    el = stepsBody.querySelector('[id="' + CSS.escape(domId) + '"]');
    if (el) return el;
    const k = stepKeyOf(s.stepName, s.idempotencyKey);
    shownKeys.add(k);
    el = stepItem(s);
    const st = groupItems.get(name);
    if (st) { st.list.prepend(el); st.det.open = true; return el; }
    let pinned = stepsBody.querySelector('#pinned-steps');
    if (!pinned) {
      pinned = h('ol', { class: 'timeline', id: 'pinned-steps', 'aria-label': 'Steps asked for' });
      stepsBody.prepend(pinned);
    }
    pinned.appendChild(el);
    return el;
  };
  onMissingFragment((frag) => {
    const m = /^step-([^/]*)\/(.*)$/.exec(frag);
    if (!m) return null;
    let name, key;
    try { name = decodeURIComponent(m[1]); key = decodeURIComponent(m[2]); } catch (_) { return null; }
    return revealStep(name, key);
  });
  // The problem step is always on the page, in its group.
  if (is && is.idempotencyKey != null) {
    try { await revealStep(is.stepName, is.idempotencyKey); } catch (_) { /* the link still scrolls to the steps */ }
  }
  const stepsPanel = h('section', { class: 'panel', 'aria-labelledby': 'steps-h', id: 'steps-panel' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'steps-h' }, 'Steps'), stepCount), stepsBody);

  // --- Graph: contract structure with the path taken, or the observed order.
  const graphPanel = h('section', { class: 'panel', 'aria-labelledby': 'graph-h', id: 'graph-panel' }, h('h2', { id: 'graph-h' }, t.contractName ? 'Contract graph' : 'Observed step order'));
  const graphBody = h('div', { class: 'graph-wrap' });
  graphPanel.appendChild(graphBody);
  const status = new Map();
  for (const a of allAttempts) status.set(a.stepName, runTone(a.status, a.validation));
  for (const s of allSteps) status.set(s.stepName, stepTone(s));
  // Every step of the thread counts, not only the pages loaded: a 61-step
  // thread's last steps are done even before their page is.
  for (const g of groups) {
    const cur = status.get(g.stepName);
    if (g.failed) status.set(g.stepName, 'bad');
    else if (cur !== 'bad' && cur !== 'warn') status.set(g.stepName, g.succeeded === g.steps ? 'ok' : 'info');
  }
  if (brokenKey) status.set(integrity.brokenStepName, 'bad');
  const path = []; // successful steps in record order
  for (const a of allAttempts) if (ok(a.status) && path[path.length - 1] !== a.stepName) path.push(a.stepName);
  const violations = [];
  for (const s of allSteps) {
    const v = s.latestValidation;
    if (v && v.validations.some((x) => x.type === 'invalid_transition') && s.previousStep) violations.push({ from: s.previousStep, to: s.stepName });
  }
  const legend = () => h('div', { class: 'graph-legend' },
    h('span', { style: '--c: var(--ok)' }, 'done'), h('span', { style: '--c: var(--bad)' }, 'failed or violated'), h('span', { style: '--c: var(--warn)' }, 'warnings'),
    h('span', { style: '--c: var(--info)' }, 'in progress'), h('span', { style: '--c: var(--border)' }, 'not reached'),
    h('span', { class: 'solid' }, 'transition'), h('span', { class: 'dash' }, 'retry / loop'), h('span', { class: 'path' }, 'path taken'), h('span', { class: 'viol' }, 'not allowed (violation)'));
  if (t.contractName) {
    gql(Q_GRAPH, { name: t.contractName, version: t.contractVersion || null }).then((d) => {
      clear(graphBody);
      const cg = d.contractGraph;
      if (!cg || !cg.graph || !cg.graph.nodes.length) { graphBody.appendChild(h('div', { class: 'empty' }, 'The contract has no steps.')); return; }
      graphBody.appendChild(graphViewport(drawGraph(cg.graph, cg.transitions, { status, path, taken: edges, violations }, `Contract ${t.contractName} v${t.contractVersion || 'latest'}`)));
      graphPanel.appendChild(legend());
    }).catch((e) => { clear(graphBody).appendChild(alertBox('bad', 'Could not load the contract graph', explain(e))); });
  } else if (groups.length || allSteps.length) {
    // Free-form: every step name the thread recorded (its groups), with the
    // orders it took between them (its edges), not just the loaded page.
    const names = groups.length ? groups.map((g) => g.stepName) : [...new Set(allSteps.map((s) => s.stepName))];
    const next = new Map(names.map((n) => [n, []]));
    for (const e of edges) if (e.from && next.has(e.from) && next.has(e.to) && e.from !== e.to && !next.get(e.from).includes(e.to)) next.get(e.from).push(e.to);
    if (!edges.length) names.forEach((n, i) => { if (names[i + 1]) next.get(n).push(names[i + 1]); });
    const nodes = names.map((n) => ({ id: n, type: 'observed', next: next.get(n) }));
    graphBody.appendChild(graphViewport(drawGraph({ nodes, entryPoints: [names[0]], terminalSteps: [] }, [], { status, path, taken: edges }, 'Observed step order')));
    if (inGroups < t.stepCount) graphPanel.appendChild(h('div', { class: 'muted small', id: 'graph-count', style: 'padding: 0 16px' }, `drawn from the first ${names.length} step names (${inGroups} of ${t.stepCount} steps)`));
    graphPanel.appendChild(legend());
  } else graphBody.appendChild(h('div', { class: 'empty' }, 'No steps yet.'));

  // --- Validation results.
  const valBody = h('div', {});
  const valCount = h('span', { class: 'muted', id: 'validations-count' });
  if (vals.status === 'rejected') valBody.appendChild(alertBox('bad', 'Could not load validation results', explain(vals.reason)));
  else {
    const rs = ((vals.value.thread && vals.value.thread.validationResults) || []).slice();
    const drawVals = () => {
      clear(valBody);
      valCount.textContent = t.contractName ? `showing ${rs.length} of ${t.validationCount}` : '';
      valBody.appendChild(rs.length ? table([
        { label: 'Step', render: (r) => h('span', {}, h('a', { href: '#' + stepDomId(r.stepName, r.idempotencyKey) }, r.stepName), r.idempotencyKey && r.idempotencyKey !== r.stepName ? h('code', { class: 'muted' }, ' ' + r.idempotencyKey) : null) },
        { label: 'Result', render: (r) => pill(r.overallStatus, { passed: 'ok', warning: 'warn', violated: 'bad' }[r.overallStatus]) },
        { label: 'Issues', render: (r) => r.validations.length ? h('ul', { style: 'margin:0;padding-left:18px' }, r.validations.map((v) =>
          h('li', {}, h('strong', {}, v.type), v.severity ? ` (${v.severity})` : '', ': ', v.message,
            v.expected || v.actual ? h('span', { class: 'muted' }, ` expected ${v.expected || '—'}, got ${v.actual || '—'}`) : null))) : h('span', { class: 'muted' }, 'none') },
        { label: 'At', render: (r) => timeTag(r.timestamp) },
      ], rs, { caption: 'Validation results' }) : h('div', { class: 'empty' }, t.contractName ? 'No validation results for this thread.' : 'Free-form threads are not validated against a contract.'));
      if (rs.length < t.validationCount) {
        const more = h('button', { type: 'button', class: 'btn-sm', id: 'more-validations' }, 'Load more validation results');
        more.addEventListener('click', async () => {
          more.disabled = true;
          try { const d = await gql(Q_VALIDATIONS, { id, offset: rs.length }); rs.push(...d.thread.validationResults); drawVals(); } catch (e) { more.replaceWith(alertBox('bad', 'Could not load', explain(e))); }
        });
        valBody.appendChild(h('div', { class: 'load-more' }, more));
      }
    };
    drawVals();
  }
  const valPanel = h('section', { class: 'panel', 'aria-labelledby': 'val-h', id: 'validation-panel' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'val-h' }, 'Validation results'), valCount), valBody);

  // --- Linked threads, both directions.
  let linkBody;
  if (links.status === 'rejected') linkBody = h('div', { class: 'panel-body' }, alertBox('bad', 'Could not load linked threads', explain(links.reason)));
  else {
    const lt = links.value.thread || { threadChain: [], linkedFrom: [] };
    const to = lt.threadChain.filter((c) => c.id !== t.id);
    const item = (c) => h('li', {}, healthBadge(c.health), ' ', statusPill(c.status), ' ', link('threads/' + encodeURIComponent(c.id), c.label || c.id, { class: 'mono', 'data-linked': c.id }),
      h('span', { class: 'muted small' }, ' ' + [c.contractName, fmtDateTime(c.startedAt)].filter(Boolean).join(' · ')));
    linkBody = h('div', { class: 'panel-body links' },
      h('div', {}, h('h3', {}, 'This thread links to'), to.length ? h('ul', { id: 'links-to' }, to.map(item)) : h('p', { class: 'muted' }, 'none (refs named linkedThread:*)')),
      h('div', {}, h('h3', {}, 'Linked from'), lt.linkedFrom.length ? h('ul', { id: 'links-from' }, lt.linkedFrom.map(item)) : h('p', { class: 'muted' }, 'no thread links here')));
  }
  const linkPanel = h('section', { class: 'panel', 'aria-labelledby': 'chain-h', id: 'links-panel' }, h('h2', { id: 'chain-h' }, 'Linked threads'), linkBody);

  const details = h('section', { class: 'panel', 'aria-labelledby': 'det-h' }, h('h2', { id: 'det-h' }, 'Details'),
    h('div', { class: 'panel-body' }, h('dl', { class: 'kv' },
      kv('Thread ID', h('span', { class: 'row' }, h('code', {}, t.id), copyButton(t.id, 'Copy thread id'))),
      t.label ? kv('Label', t.label) : null,
      kv('Owner', actor(t.ownerId) || '—'),
      kv('Tags', t.tags.length ? h('span', { class: 'tags' }, t.tags.map((x) => h('span', { class: 'tag' }, x))) : h('span', { class: 'muted' }, 'none')),
      kv('Refs', refsText(refs) ? h('code', {}, refsText(refs)) : h('span', { class: 'muted' }, 'none')),
      kv('Last hash', t.lastHash ? h('code', { class: 'truncate', title: t.lastHash }, t.lastHash) : '—'))));

  add(root, crumbs,
    h('div', { class: 'page-head' }, h('div', {}, h('h1', { class: 'mono', style: 'font-size:19px;overflow-wrap:anywhere' }, t.label || t.id),
      h('p', { class: 'desc' }, t.contractName ? `Thread of contract ${t.contractName}` : 'Free-form thread', ' · ', h('span', { id: 'live-note', class: 'muted' }, 'updates live'))),
      h('div', { class: 'row' }, tzToggle(() => { clear(root); build(id, root, ctx); }), integrity ? integrityBadge(integrity, true) : null, threadActions(t))),
    banner, cards, wfPanel, stepsPanel, graphPanel, valPanel, linkPanel, details);
  return [t.status, t.attemptCount, t.lastHash, hh.status].join('|');
}

function integrityBadge(s, withId) {
  const id = withId ? 'integrity-badge' : null;
  if (!s) return pill('integrity unknown', 'neutral');
  const ev = `${s.totalEvents} event${s.totalEvents === 1 ? '' : 's'}`;
  if (s.verified) return h('span', { class: 'pill ok', id, title: `${ev} verified at ${s.lastVerifiedAt}` }, `Hash chain verified · ${ev}`);
  if (s.code === 'unknown_key') return h('span', { class: 'pill warn', id, title: s.error || '' }, 'Signed with an unknown key');
  return h('span', { class: 'pill bad', id, title: s.error || '' }, s.brokenStepName ? `Hash chain broken at ${s.brokenStepName}` : 'Hash chain broken');
}

function card(k, v) { return h('div', { class: 'card' }, h('div', { class: 'k' }, k), h('div', { class: 'v' }, v)); }
function kv(k, v) { return [h('dt', {}, k), h('dd', {}, v)]; }
