// A typed handler per push type, per-thread handlers, waitForStep and
// thread-level alerts, against a real engine whose alert sweep flags a
// thread silent after one second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PUSH_EVENTS, WaitTimeoutError, WaitCancelledError } from '../src/index.js';
import { useEngine } from './helpers/engine.js';
import { waitFor, ORDER_FLOW } from './helpers/util.js';

// A principal of its own per test: the engine hands a principal's
// notifications to one of its sessions, and keeps undelivered ones for it.
const { dial: dialAs } = useEngine({
  env: { THREADENGINE_ALERTS__SWEEP_INTERVAL: '1s', THREADENGINE_ALERTS__SILENT_AFTER: '1s' },
  contracts: [ORDER_FLOW],
});
const dial = (options) => dialAs('listener', options);

test('every push type the engine sends reaches its own handler, and only it', async () => {
  const conn = await dial();
  const got = Object.fromEntries(PUSH_EVENTS.map((e) => [e, []]));
  const record = (n) => { got[n.event].push(n); n.ack(); };
  for (const e of ['step.success', 'step.failed', 'rule.passed', 'rule.violated']) {
    await conn.subscribe(e, 'validate', record);
    await conn.subscribe(e, 'pay', record);
  }
  for (const e of ['thread.completed', 'thread.cancelled', 'thread.failed']) await conn.subscribe(e, record);

  // validate passes; pay then fails; the thread is completed only by hand (free-form below).
  const good = await conn.start('typed-good', { contract: 'order_flow' });
  await good.step('validate').addContext({ items: 1 }).success();
  await good.step('pay').failed({ error: 'declined' });
  // pay first is no entry point: a critical violation that fails the thread.
  const bad = await conn.start('typed-bad', { contract: 'order_flow' });
  await bad.step('pay').success();
  const free = await conn.start('typed-free');
  await free.complete('done');
  const gone = await conn.start('typed-gone');
  await gone.cancel('not needed');

  const want = { 'step.success': 2, 'step.failed': 1, 'rule.passed': 2, 'rule.violated': 1,
    'thread.completed': 1, 'thread.cancelled': 1, 'thread.failed': 1 };
  const counts = () => Object.fromEntries(Object.entries(got).map(([k, v]) => [k, v.length]));
  await waitFor(() => PUSH_EVENTS.every((e) => got[e].length >= want[e]), `each push type (${JSON.stringify(want)}; have ${JSON.stringify(counts())})`);
  assert.deepEqual(counts(), want);
  assert.deepEqual(got['step.success'].map((n) => [n.stepName, n.threadId]).sort(),
    [['pay', bad.threadId], ['validate', good.threadId]].sort());
  assert.deepEqual(got['step.failed'].map((n) => [n.stepName, n.stepStatus]), [['pay', 'failed']]);
  assert.deepEqual(got['rule.passed'].map((n) => [n.stepName, n.threadId]).sort(),
    [['pay', good.threadId], ['validate', good.threadId]].sort(), 'a failed step can still pass its rules');
  const violated = got['rule.violated'].find((n) => n.threadId === bad.threadId);
  assert.equal(violated.stepName, 'pay');
  assert.equal(violated.severity, 'critical');
  assert.deepEqual(got['thread.completed'].map((n) => n.threadId), [free.threadId]);
  assert.deepEqual(got['thread.cancelled'].map((n) => n.threadId), [gone.threadId]);
  assert.deepEqual(got['thread.failed'].map((n) => n.threadId), [bad.threadId],
    'a failed thread is announced as thread.failed, not completed');
  assert.equal(got['thread.failed'][0].isThreadEvent(), true);
  assert.equal(got['thread.failed'][0].violationType, violated.violationType);
  for (const [event, list] of Object.entries(got)) {
    for (const n of list) assert.equal(n.event, event);
  }
});

test('thread.on() hears its own thread only', async () => {
  const conn = await dial();
  const a = await conn.start('on-a');
  const b = await conn.start('on-b');
  const heard = [];
  const sub = await a.on('step.success', 'on-step', (n) => { heard.push(n.threadId); n.ack(); });
  const ended = [];
  await a.on('thread.*', (n) => { ended.push([n.event, n.threadId]); n.ack(); });
  await b.step('on-step').success();
  await a.step('on-step').success();
  await b.cancel();
  await a.complete();
  await waitFor(() => heard.length === 1 && ended.length === 1, 'the notifications of thread a');
  assert.deepEqual(heard, [a.threadId]);
  assert.deepEqual(ended, [['thread.completed', a.threadId]]);
  await sub.unsubscribe();
});

test('waitForStep resolves with the step\'s notification without a subscribe(), filtered by status', async () => {
  const conn = await dial();
  const t = await conn.start('wait-step');
  const other = await conn.start('wait-step-other');
  const succeeded = t.waitForStep('charge', { statuses: ['success'], timeout: 20_000 });
  await other.step('charge').success(); // another thread's
  await t.step('charge').addContext({ n: 1 }).failed('try again'); // not a status asked for
  const r = await t.step('charge').addContext({ n: 1 }).success();
  const n = await succeeded;
  assert.equal(n.threadId, t.threadId);
  assert.equal(n.stepId, r.stepId);
  assert.equal(n.stepStatus, 'success');
  assert.equal(n.acked, true);

  // Any status when none is named; a step recorded before the wait began is
  // still pushed (the engine keeps it for the principal).
  await t.step('early').failed('boom');
  const early = await t.waitForStep('early', { timeout: 20_000 });
  assert.equal(early.event, 'step.failed');

  await assert.rejects(t.waitForStep('never', { timeout: 200 }), WaitTimeoutError);
  const ac = new AbortController();
  const aborted = t.waitForStep('never', { signal: ac.signal });
  ac.abort();
  await assert.rejects(aborted, WaitCancelledError);
});

test('thread-level alerts reach a rule.violated handler without a step name', async () => {
  const conn = await dial();
  const alerts = [];
  await conn.subscribe('rule.violated', (n) => { alerts.push(n); n.ack(); });
  const t = await conn.start('goes-silent');
  // alerts.silent_after is 1 s and the sweep runs every second.
  await waitFor(() => alerts.some((n) => n.threadId === t.threadId), 'the silent-thread alert', 20_000);
  const n = alerts.find((x) => x.threadId === t.threadId);
  assert.equal(n.event, 'rule.violated');
  assert.equal(n.stepName, 'global');
  assert.equal(n.violationType, 'thread_silent');
  assert.equal(n.severity, 'warning');
});

test('subscribe() checks its arguments', async () => {
  const conn = await dial();
  await assert.rejects(conn.subscribe('step.done', 'x', () => {}), { code: 'invalid_argument' });
  await assert.rejects(conn.subscribe('step.failed', () => {}), { code: 'invalid_argument', message: /needs a step name/ });
  await assert.rejects(conn.subscribe('thread.failed', 'pay', () => {}), { code: 'invalid_argument' });
  await assert.rejects(conn.subscribe('rule.passed', 'pay'), { code: 'invalid_argument' });
  const s = await conn.subscribe('step.failed', 'pay', () => {});
  await conn.unsubscribe('step.failed', 'pay');
  await s.unsubscribe(); // already removed: nothing to do
});
