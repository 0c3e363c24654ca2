// The contract editor (/ui/contracts/new, /ui/contracts/<name>/edit):
// write or paste a Gherkin (or YAML) contract and see, as you type, every
// problem on its line (POST /v1/contracts/preview, debounced), the compiled
// graph, the changes against the published version (a line diff computed
// here), a replay of the draft over the contract's latest threads (POST
// /v1/contracts/<name>/replay), and publish it (POST for a new contract,
// PUT for a new version). Viewers get it read-only. The draft is kept in
// the browser (localStorage) until it is published or discarded.
import { h, table, alertBox, confirmDialog, toast, pill } from '../ui.js';
import { api, explain, ApiError } from '../api.js';
import { link, navigate, state } from '../app.js';
import { drawGraph, graphViewport } from './graph.js';
import { timeTag } from '../fmt.js';
import { codeEditor } from './code_editor.js';
import { diffLines, hunks } from './linediff.js';

const TEMPLATE = `Feature: my_contract
Version: 1
Description: What this process does, in one sentence.

Rule: A request is received
  When step "receive" is submitted
  Then owner must be "intake"
  And this step is an entry point
  And content "reference" must not be empty

Rule: The request is fulfilled
  When step "fulfil" is submitted
  Then owner must be "fulfilment"
  And step "receive" must have succeeded
  And this step is terminal
`;

const DEBOUNCE_MS = 350;
const draftKey = (name) => 'threadengine.draft.' + (name || '_new');

let cssReady;
function ensureStyles() {
  if (!cssReady) {
    cssReady = new Promise((resolve) => {
      const l = document.createElement('link');
      l.rel = 'stylesheet'; l.href = 'ui/assets/editor.css';
      l.onload = resolve; l.onerror = resolve;
      document.head.appendChild(l);
    });
  }
  return cssReady;
}

const enc = encodeURIComponent;
const plural = (n, one, many) => `${n} ${n === 1 ? one : (many || one + 's')}`;
const canWrite = () => !!state.me && ['admin', 'member'].includes(state.me.role);

function readDraft(name) { try { return localStorage.getItem(draftKey(name)); } catch (_) { return null; } }
function writeDraft(name, src) { try { if (src === null) localStorage.removeItem(draftKey(name)); else localStorage.setItem(draftKey(name), src); } catch (_) { /* private mode: not kept */ } }

// setVersion rewrites the draft's version (Gherkin "Version:", YAML
// "version:"), adding a Gherkin Version line after Feature when missing.
export function setVersion(src, v) {
  if (/^\s*Version:.*$/m.test(src)) return src.replace(/^(\s*)Version:.*$/m, `$1Version: ${v}`);
  if (/^version:.*$/m.test(src)) return src.replace(/^version:.*$/m, `version: ${v}`);
  return src.replace(/^(\s*Feature:.*)$/m, `$1\nVersion: ${v}`);
}

export async function renderContractEditor(ctx) {
  await ensureStyles();
  const editName = ctx.params[0] || '';
  const writer = canWrite();
  // The published version the draft is compared with, replayed against
  // and published over: the contract being edited, or on /new an existing
  // contract the draft's Feature names.
  let published = null;
  if (editName) published = await api.get('/v1/contracts/' + enc(editName));
  const base = published ? published.source || '' : TEMPLATE;
  const saved = writer ? readDraft(editName) : null;
  const initial = saved !== null && saved !== base ? saved : base;

  const problemsId = 'editor-problems';
  const ed = codeEditor({ value: initial, label: 'Contract source (Gherkin or YAML)', readOnly: !writer, describedBy: 'editor-help' });
  const status = h('div', { class: 'editor-status', id: 'editor-status', role: 'status', 'aria-live': 'polite' }, 'Checking…');
  const lineMsg = h('div', { class: 'code-line-msg', id: 'editor-line-msg', 'aria-live': 'polite' });
  const problemList = h('div', { id: problemsId, class: 'problem-list' });
  const graphBody = h('div', { class: 'graph-wrap', id: 'editor-graph' }, h('div', { class: 'empty' }, 'The graph appears when the draft is valid.'));
  const diffHead = h('span', { class: 'muted', id: 'diff-summary' });
  const diffTitle = h('h2', { id: 'diff-h' }, 'Changes');
  const diffBody = h('div', { id: 'editor-diff', class: 'diff' });
  const replayBody = h('div', { id: 'replay-result' });
  const publishMsg = h('div', { id: 'publish-msg', 'aria-live': 'polite' });
  const versionHint = h('div', { id: 'version-hint' });
  const draftNote = h('div', { id: 'draft-note' });

  const threadsSel = h('select', { id: 'replay-threads', 'aria-label': 'Threads to replay' },
    [100, 1000, 5000].map((n) => h('option', { value: String(n), selected: n === 1000 || null }, `last ${n.toLocaleString('en')} threads`)));
  const replayBtn = h('button', { type: 'button', id: 'replay', disabled: true }, 'Replay');
  const publishBtn = writer ? h('button', { type: 'button', class: 'btn-primary', id: 'publish', disabled: true }, 'Publish') : null;

  // s is what the page knows about the current draft.
  const s = { seq: 0, timer: 0, preview: null, target: published, targetName: editName, lastGraph: null, graphKey: '', replayHash: '', replay: null };
  const alive = () => ctx.isCurrent();

  function showProblems(p) {
    const problems = p ? p.problems || [] : [];
    const warnings = p ? p.warnings || [] : [];
    ed.setProblems(problems);
    problemList.replaceChildren();
    if (problems.length) {
      problemList.appendChild(h('h3', {}, plural(problems.length, 'problem')));
      problemList.appendChild(h('ol', { class: 'problems', id: 'problem-items' }, problems.map((pr) => h('li', { class: 'bad' },
        pr.line ? h('button', { type: 'button', class: 'btn-link line-link', 'data-line': String(pr.line), 'aria-label': `Go to line ${pr.line}: ${pr.message}` }, 'Line ' + pr.line)
          : h('span', { class: 'muted' }, pr.field || 'source'),
        ' ', h('span', { class: 'msg' }, pr.message)))));
    }
    if (warnings.length) {
      problemList.appendChild(h('h3', {}, plural(warnings.length, 'warning')));
      problemList.appendChild(h('ul', { class: 'problems warnings' }, warnings.map((w) => h('li', { class: 'warn' },
        w.line ? h('button', { type: 'button', class: 'btn-link line-link', 'data-line': String(w.line), 'aria-label': `Go to line ${w.line}: ${w.message}` }, 'Line ' + w.line) : null,
        ' ', h('span', { class: 'msg' }, w.message)))));
    }
    showLineMessage();
  }
  problemList.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-line]');
    if (b) ed.goToLine(Number(b.dataset.line));
  });

  function showLineMessage() {
    const line = ed.currentLine();
    const msgs = ed.problemsAt(line);
    lineMsg.replaceChildren(msgs.length ? h('span', { class: 'bad-text' }, `Line ${line}: ${msgs.join(' · ')}`) : h('span', { class: 'muted' }, `Line ${line}`));
  }
  for (const ev of ['keyup', 'click', 'caret', 'focus']) ed.textarea.addEventListener(ev, showLineMessage);

  function showGraph(p) {
    if (p && p.valid && p.graph) {
      s.lastGraph = p.graph;
      graphBody.classList.remove('stale');
    } else if (s.lastGraph) {
      graphBody.classList.add('stale');
    }
    if (!s.lastGraph) return;
    // Redraw only when the graph or its staleness changed (not on every
    // keystroke's preview), so pan and zoom survive typing.
    const key = JSON.stringify(s.lastGraph) + graphBody.classList.contains('stale');
    if (key === s.graphKey) return;
    s.graphKey = key;
    const g = s.lastGraph;
    const nodes = (g.nodes || []).filter((n) => n.type === 'step').map((n) => ({ id: n.id, owner: n.owner, type: n.step_type || 'managed', next: n.next || [] }));
    const groups = (g.nodes || []).filter((n) => n.type === 'parallel_group');
    const svg = drawGraph({ nodes, entryPoints: g.entry_points || [], terminalSteps: g.terminal_steps || [] },
      (g.transitions || []).map((t) => ({ from: t.from, to: t.to, maxRetries: t.max_retries })), {}, 'Compiled graph of the draft');
    graphBody.replaceChildren(...[
      graphBody.classList.contains('stale') ? h('p', { class: 'muted small stale-note' }, 'The draft has problems: this is the graph of its last valid state.') : null,
      graphViewport(svg),
      groups.length ? h('ul', { class: 'groups small' }, groups.map((gr) => h('li', {}, h('strong', {}, gr.id), ': ', (gr.steps || []).join(', '),
        gr.mode === 'all_of' ? ' (all must succeed)' : ' (any)', gr.max_duration ? ` within ${gr.max_duration}` : ''))) : null,
    ].filter(Boolean));
  }

  function showDiff() {
    diffTitle.textContent = s.target ? `Changes against ${s.target.name} v${s.target.version}` : 'Changes';
    if (!s.target) {
      diffHead.textContent = '';
      diffBody.replaceChildren(h('div', { class: 'empty' }, s.targetName ? `No contract named ${s.targetName} is published: publishing creates it.` : 'A new contract: nothing published to compare with yet.'));
      return;
    }
    const d = diffLines(s.target.source || '', ed.textarea.value);
    const add = d.filter((x) => x.op === '+').length, del = d.filter((x) => x.op === '-').length;
    diffHead.textContent = add || del ? `+${add} −${del} lines` : 'no changes';
    if (!add && !del) {
      diffBody.replaceChildren(h('div', { class: 'empty' }, `The draft is the published v${s.target.version}, line for line.`));
      return;
    }
    diffBody.replaceChildren(h('div', { class: 'diff-lines', role: 'table', 'aria-label': `Changes against v${s.target.version}` },
      hunks(d).map((x) => x.op === 'skip'
        ? h('div', { class: 'd-skip', role: 'row' }, h('span', { role: 'cell' }, `⋯ ${plural(x.count, 'unchanged line')}`))
        : h('div', { class: 'd-line ' + ({ '+': 'add', '-': 'del', ' ': 'same' }[x.op]), role: 'row' },
          h('span', { class: 'ln', role: 'cell' }, x.a ? String(x.a) : ''), h('span', { class: 'ln', role: 'cell' }, x.b ? String(x.b) : ''),
          h('span', { class: 'sign', role: 'cell', 'aria-label': { '+': 'added', '-': 'removed', ' ': 'unchanged' }[x.op] }, x.op === ' ' ? ' ' : x.op === '-' ? '−' : '+'),
          h('code', { role: 'cell' }, x.text || ' ')))));
  }

  async function loadTarget(name) {
    if (name === s.targetName) return;
    s.targetName = name;
    s.target = null;
    try { s.target = await api.get('/v1/contracts/' + enc(name)); } catch (e) { if (!(e instanceof ApiError && e.status === 404)) throw e; }
    if (s.targetName !== name) return;
    showDiff(); updateButtons();
  }

  function updateButtons() {
    if (!replayBody.firstChild || replayBody.querySelector('#replay-empty')) {
      replayBody.replaceChildren(h('p', { class: 'muted', id: 'replay-empty' }, s.target
        ? `Replay judges the latest threads of ${s.target.name} again, step by step, as if this draft had been in force. Nothing is written.`
        : 'Replay needs a published contract: it runs once the draft names one.'));
    }
    const p = s.preview;
    const valid = !!(p && p.valid);
    replayBtn.disabled = !valid || !s.target;
    replayBtn.title = !s.target ? 'Replay needs a published contract with threads' : !valid ? 'Fix the problems first' : '';
    versionHint.replaceChildren();
    if (!publishBtn) return;
    const v = valid && p.contract ? p.contract.version : 0;
    publishBtn.disabled = !valid;
    publishBtn.textContent = valid ? `Publish v${v}` : 'Publish';
    if (valid && s.target && v <= s.target.version) {
      const next = s.target.version + 1;
      const b = h('button', { type: 'button', class: 'btn-sm', id: 'bump-version' }, `Use version ${next}`);
      b.addEventListener('click', () => { ed.setValue(setVersion(ed.textarea.value, next)); ed.goToLine(lineOf(ed.textarea.value, /^\s*(Version|version):/)); });
      versionHint.appendChild(alertBox('info', `Publishing needs a version above v${s.target.version}.`, `The draft says version ${v}. `, b));
    }
  }

  function markReplayStale() {
    const cur = s.preview && s.preview.content_hash;
    replayBody.classList.toggle('stale', !!s.replay && cur !== s.replayHash);
  }

  async function check() {
    const seq = ++s.seq;
    const src = ed.textarea.value;
    status.textContent = 'Checking…';
    let p;
    try {
      p = await api.post('/v1/contracts/preview', { source: src });
    } catch (e) {
      if (seq !== s.seq || !alive()) return;
      status.replaceChildren(h('span', { class: 'bad-text' }, 'Could not check the draft: ' + explain(e)));
      return;
    }
    if (seq !== s.seq || !alive()) return;
    s.preview = p;
    const fmt = p.source_format === 'gherkin' ? 'Gherkin' : 'YAML';
    if (p.valid) {
      const c = p.contract;
      status.replaceChildren(pill('valid', 'ok'), ` ${fmt} · ${c.name} v${c.version} · ${plural(c.steps.length, 'step')}`,
        (p.warnings || []).length ? ` · ${plural(p.warnings.length, 'warning')}` : '');
    } else {
      status.replaceChildren(pill(plural(p.problems.length, 'problem'), 'bad'), ` ${fmt}`);
    }
    if (!editName) {
      const named = p.valid ? p.contract.name : draftName(src);
      if (named) loadTarget(named).catch(() => {});
    }
    showProblems(p);
    showGraph(p);
    updateButtons();
    markReplayStale();
  }

  function schedule() {
    publishMsg.replaceChildren();
    clearTimeout(s.timer);
    s.timer = setTimeout(() => { if (alive()) check(); }, DEBOUNCE_MS);
    if (writer) writeDraft(editName, ed.textarea.value === base ? null : ed.textarea.value);
    showDiff();
  }
  ed.textarea.addEventListener('input', schedule);

  replayBtn.addEventListener('click', async () => {
    const p = s.preview;
    if (!p || !p.valid || !s.target) return;
    const name = s.target.name;
    replayBtn.disabled = true;
    replayBody.setAttribute('aria-busy', 'true');
    replayBody.replaceChildren(h('p', { class: 'loading', role: 'status' }, `Replaying the draft over the latest threads of ${name}…`));
    try {
      const r = await api.post('/v1/contracts/' + enc(name) + '/replay?threads=' + threadsSel.value, { source: ed.textarea.value });
      if (!alive()) return;
      s.replay = r; s.replayHash = r.content_hash;
      replayBody.replaceChildren(renderReplay(r));
    } catch (e) {
      if (!alive()) return;
      replayBody.replaceChildren(alertBox('bad', 'Replay refused', `${e.code ? e.code + ': ' : ''}${explain(e)}`));
    } finally {
      replayBody.removeAttribute('aria-busy');
      updateButtons();
      markReplayStale();
    }
  });

  if (publishBtn) {
    publishBtn.addEventListener('click', async () => {
      const p = s.preview;
      if (!p || !p.valid) return;
      const c = p.contract;
      const update = !!s.target;
      const r = s.replay && s.replayHash === p.content_hash ? s.replay : null;
      const replayLine = r ? ` The replay found it would refuse ${r.threads.refused} and violate ${r.threads.violated} of the latest ${r.threads.judged} threads.` : '';
      const ok = await confirmDialog({ title: `Publish ${c.name} v${c.version}?`,
        message: (update ? `New threads of ${c.name} will use v${c.version}; running threads keep the version they started with.` : `This creates contract ${c.name}.`) + replayLine,
        confirmLabel: `Publish v${c.version}` });
      if (!ok) return;
      publishMsg.replaceChildren();
      publishBtn.disabled = true;
      try {
        const body = { source: ed.textarea.value };
        const out = update ? await api.put('/v1/contracts/' + enc(editName || c.name), body) : await api.post('/v1/contracts', body);
        writeDraft(editName, null);
        toast(`${out.name} v${out.version} published`);
        navigate('contracts/' + enc(out.name) + '/' + out.version);
      } catch (e) {
        publishBtn.disabled = false;
        if (e instanceof ApiError && e.code === 'invalid_contract' && e.problem && e.problem.problems) showProblems({ problems: e.problem.problems, warnings: [] });
        publishMsg.replaceChildren(alertBox('bad', 'Not published', h('span', {}, h('code', { class: 'code' }, e.code || 'error'), ' ', explain(e))));
      }
    });
  }

  if (saved !== null && saved !== base) {
    const discard = h('button', { type: 'button', class: 'btn-sm', id: 'discard-draft' }, published ? `Discard, back to v${published.version}` : 'Discard');
    discard.addEventListener('click', () => { writeDraft(editName, null); ed.setValue(base); draftNote.replaceChildren(); });
    draftNote.appendChild(alertBox('info', 'Your unpublished draft was restored.', 'It is kept in this browser until you publish or discard it. ', discard));
  }

  const title = editName ? `${writer ? 'Edit' : 'View'} ${editName}` : 'New contract';
  const crumbs = h('div', { class: 'crumbs' }, link('contracts', 'Contracts'), ' / ',
    editName ? [link('contracts/' + enc(editName) + '/' + published.version, editName), writer ? ' / edit' : ' / source'] : 'new');
  const page = h('div', { class: 'editor-page' }, crumbs,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', {}, title),
        h('p', { class: 'desc' }, editName ? `Published: v${published.version}${published.created_at ? ', ' : ''}`
          : 'Write or paste a contract in Gherkin (or YAML). It is checked as you type.',
        editName && published.created_at ? timeTag(published.created_at) : null)),
      h('div', { class: 'row editor-actions' }, threadsSel, replayBtn, publishBtn)),
    writer ? null : alertBox('info', 'Read only', `Your role (${(state.me && state.me.role) || 'viewer'}) can check and replay a contract but not publish one.`),
    draftNote, publishMsg, versionHint,
    h('div', { class: 'editor-grid' },
      h('section', { class: 'panel editor-source', 'aria-labelledby': 'src-h' },
        h('div', { class: 'panel-head' }, h('h2', { id: 'src-h' }, 'Source'), status),
        ed.el, lineMsg,
        h('p', { class: 'hint small muted', id: 'editor-help' }, writer ? 'Tab indents; press Esc then Tab to leave the editor. Problems are marked in the margin; choose one in the list to go to its line.'
          : 'Read only. Problems are marked in the margin; choose one in the list to go to its line.'),
        problemList),
      h('div', { class: 'editor-side' },
        h('section', { class: 'panel' }, h('h2', {}, 'Graph'), graphBody),
        h('section', { class: 'panel' }, h('div', { class: 'panel-head' }, diffTitle, diffHead), diffBody))),
    h('section', { class: 'panel', id: 'replay-panel', 'aria-labelledby': 'replay-h' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'replay-h' }, 'Replay before publishing'),
        h('span', { class: 'muted small' }, 'What this draft would have done to the contract\'s latest threads')),
      h('div', { class: 'panel-body' }, replayBody)));
  showDiff();
  updateButtons();
  check();
  return page;
}

// draftName is the contract a source names (Gherkin Feature:, YAML
// contract_name:), even when it has problems.
function draftName(src) {
  const m = src.match(/^\s*Feature:[ \t]*([A-Za-z0-9_]+)[ \t]*$/m) || src.match(/^contract_name:[ \t]*["']?([A-Za-z0-9_.-]+)["']?[ \t]*$/m);
  return m ? m[1] : '';
}

function lineOf(src, re) {
  const i = src.split('\n').findIndex((l) => re.test(l));
  return i < 0 ? 1 : i + 1;
}

const outcomeTone = { refused: 'bad', violated: 'bad', warning: 'warn' };

function threadLinks(ids) {
  return h('span', { class: 'examples' }, (ids || []).map((id) => link('threads/' + enc(id), id.slice(0, 8), { class: 'mono', title: id, 'data-example': id })).flatMap((a, i) => (i ? [' ', a] : [a])));
}

// renderReplay shows a replay's answer: the sentence, the counts, and per
// rule the threads concerned with links to examples.
export function renderReplay(r) {
  const t = r.threads;
  const pct = (n) => (t.judged && n ? ` (${(100 * n / t.judged).toFixed(n * 100 / t.judged < 10 ? 1 : 0)} %)` : '');
  if (!t.judged) {
    return h('div', {}, h('p', { id: 'replay-headline' }, `${r.contract} has no threads yet: there is nothing to replay.`));
  }
  const parts = [];
  if (t.refused) parts.push(`refused ${t.refused}`);
  if (t.violated) parts.push(`violated ${t.violated}`);
  const headline = parts.length ? `This draft would have ${parts.join(' and ')} of ${plural(t.judged, 'thread')}.` : `This draft would have accepted all ${plural(t.judged, 'thread')} without a violation.`;
  const incomplete = r.complete ? null : alertBox('warn', r.stopped === 'deadline' ? 'Stopped at the time limit' : 'Stopped at the read limit',
    `Judged ${t.judged.toLocaleString('en')} of the ${t.requested.toLocaleString('en')} threads asked for (${(r.rows_read || 0).toLocaleString('en')} rows read); the counts cover those.`);
  const card = (k, v, id, tone) => h('div', { class: 'card' }, h('div', { class: 'k' }, k), h('div', { class: 'v' + (tone ? ' ' + tone : ''), id }, v));
  const notes = [
    r.versions && r.versions.length ? `Threads judged by version: ${r.versions.map((v) => `v${v.version} ${v.threads}`).join(', ')}.` : null,
    r.newest_started_at ? h('span', {}, 'Started between ', timeTag(r.oldest_started_at), ' and ', timeTag(r.newest_started_at), '.') : null,
    t.truncated ? `${plural(t.truncated, 'thread')} had more than ${r.steps.max_per_thread} steps: only their first ${r.steps.max_per_thread} were judged.` : null,
    r.steps.semantic_unjudged ? `${plural(r.steps.semantic_unjudged, 'step')} carry semantic questions; replay does not put them to a classifier.` : null,
    r.rules_omitted ? `${plural(r.rules_omitted, 'further rule')} not listed.` : null,
    `${plural(r.steps.judged, 'step')} judged, ${(r.rows_read || 0).toLocaleString('en')} rows read in ${r.elapsed_ms} ms.`,
  ].filter(Boolean);
  return h('div', { class: 'replay' },
    h('p', { class: 'replay-headline', id: 'replay-headline' }, h('strong', {}, headline)),
    incomplete,
    h('div', { class: 'cards' },
      card('Threads judged', r.complete ? String(t.judged) : `${t.judged} of ${t.requested}`, 'replay-judged'),
      card('Would refuse a step', `${t.refused}${pct(t.refused)}`, 'replay-refused', t.refused ? 'bad-text' : ''),
      card('Would violate', `${t.violated}${pct(t.violated)}`, 'replay-violated', t.violated ? 'bad-text' : ''),
      card('Would now pass', t.recorded_violated ? `${t.would_now_pass} of ${t.recorded_violated} violated` : 'none violated before', 'replay-now-pass', t.would_now_pass ? 'ok-text' : ''),
      card('Newly failing', `${t.newly_failing}${pct(t.newly_failing)}`, 'replay-newly', t.newly_failing ? 'bad-text' : '')),
    table([
      { label: 'Outcome', render: (x) => pill(x.outcome, outcomeTone[x.outcome]) },
      { label: 'Rule', render: (x) => h('div', {}, h('span', { class: 'mono' }, x.type), x.rule ? h('span', { class: 'muted small' }, ' · ' + x.rule) : null,
        h('div', { class: 'reason ' + (x.outcome === 'warning' ? 'warn' : 'bad') }, x.message)) },
      { label: 'Step', render: (x) => h('span', { class: 'mono' }, x.step) },
      { label: 'Field', render: (x) => x.field && x.field !== 'stepName' ? h('span', { class: 'mono' }, x.field.replace(/^context\./, '')) : h('span', { class: 'muted' }, '—') },
      { label: 'Threads', render: (x) => h('span', { class: 'num' }, `${x.threads}${pct(x.threads)}`) },
      { label: 'Examples', render: (x) => threadLinks(x.examples) },
    ], (r.rules || []).map((x) => Object.assign({ __attrs: { 'data-rule': `${x.outcome}:${x.type}:${x.step}:${x.field || ''}` } }, x)),
    { empty: 'No rule of the draft is broken by these threads.', caption: 'Rules the draft applies, by threads concerned' }),
    t.would_now_pass ? h('p', { class: 'small' }, `Recorded as violated, would pass now: `, threadLinks(t.would_now_pass_examples)) : null,
    t.newly_failing ? h('p', { class: 'small' }, `Passed as recorded, would be refused or violated now: `, threadLinks(t.newly_failing_examples)) : null,
    h('ul', { class: 'replay-notes small muted' }, notes.map((n) => h('li', {}, n))));
}
