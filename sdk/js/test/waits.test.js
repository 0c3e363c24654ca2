// Waits (permission, validation, validation in the reply) and thread keys
// against a real engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ThreadengineError, WaitError, PermissionDeniedError, ValidationViolatedError, ValidationUnavailableError,
  WaitTimeoutError, WaitCancelledError, PermissionGrant,
} from '../src/index.js';
import { useEngine } from './helpers/engine.js';
import { UUID, ORDER_FLOW } from './helpers/util.js';

// A second contract, for the key whose thread has another one.
const RETURNS = `contract_name: returns_flow
version: 1
entry_points: [receive]
parties: [checkout]
steps:
  - id: receive
    owner: checkout
transitions: []
terminal_steps: [receive]
`;

const { dial: dialAs } = useEngine({ contracts: [ORDER_FLOW, RETURNS] });
const dial = (options) => dialAs('waiter', options);

test('waitFor: allowed once the predecessor succeeded; the next report carries the grant and consumes it', async () => {
  const conn = await dial();
  const t = await conn.start('wait-allowed', { contract: 'order_flow' });
  // Asked before validate is recorded: the engine holds the answer until it is.
  const pending = t.waitFor('pay', { timeout: 20_000 });
  const v = await t.step('validate').addContext({ items: 1 }).success();
  assert.equal(v.duplicate, false);
  const grant = await pending;
  assert.ok(grant instanceof PermissionGrant);
  assert.equal(grant.decision, 'allowed');
  assert.equal(grant.stepName, 'pay');
  assert.equal(grant.threadId, t.threadId);
  assert.match(grant.invocationId, UUID);

  // The grant's invocation rides on the next report of pay.
  const paid = await t.step('pay').success();
  assert.equal(paid.invocationId, grant.invocationId);
  assert.equal(paid.duplicate, false);

  // The success of validate enabled one grant only: a second invocation waits and times out.
  await assert.rejects(t.waitFor('pay', { timeout: 600 }), (err) => {
    assert.ok(err instanceof WaitTimeoutError && err instanceof WaitError && err instanceof ThreadengineError);
    assert.equal(err.code, 'wait_timed_out');
    assert.equal(err.decision, 'timed_out');
    assert.equal(err.result.decision, 'timed_out', 'the engine answered timed_out itself');
    return true;
  });
  // The same invocation asking again is allowed again, consuming nothing more.
  const again = await t.waitFor('pay', { invocationId: grant.invocationId, timeout: 5000 });
  assert.equal(again.invocationId, grant.invocationId);
});

test('waitFor: another party\'s step is denied, with the engine\'s reason', async () => {
  const conn = await dial();
  const t = await conn.start('wait-denied', { contract: 'order_flow' });
  await assert.rejects(t.waitFor('ship', { timeout: 5000 }), (err) => {
    assert.ok(err instanceof PermissionDeniedError);
    assert.equal(err.code, 'permission_denied');
    assert.equal(err.decision, 'denied');
    assert.equal(err.stepName, 'ship');
    assert.match(err.invocationId, UUID);
    assert.ok(err.message.length > 0);
    return true;
  });
  // A free-form thread allows every step at once.
  const free = await conn.start('wait-free');
  assert.equal((await free.waitFor('anything', { timeout: 5000 })).decision, 'allowed');
});

test('grant.cancel() gives the permission back; a report carrying it is refused', async () => {
  const conn = await dial();
  const t = await conn.start('wait-cancel', { contract: 'order_flow' });
  await t.step('validate').addContext({ items: 1 }).success();
  const grant = await t.waitFor('pay', { timeout: 5000 });
  const r = await grant.cancel();
  assert.equal(r.decision, 'cancelled');
  assert.equal(r.invocationId, grant.invocationId);
  // The thread no longer hands the grant to the next report...
  const next = t.step('pay');
  // ...and a report that names it anyway is refused.
  await assert.rejects(next.invocationId(grant.invocationId).success(), { code: 'invocation_cancelled' });
  await assert.rejects(t.waitFor('pay', { invocationId: grant.invocationId, timeout: 5000 }),
    (err) => err instanceof PermissionDeniedError && err.engineCode === 'invocation_cancelled');
});

test('an aborted wait sends cancelWait: the engine grants nothing to it', async () => {
  const conn = await dial();
  const t = await conn.start('wait-abort', { contract: 'order_flow' });
  const ac = new AbortController();
  const first = t.waitFor('pay', { signal: ac.signal, timeout: 30_000 });
  ac.abort(new Error('user gave up'));
  await assert.rejects(first, (err) => {
    assert.ok(err instanceof WaitCancelledError);
    assert.equal(err.code, 'wait_cancelled');
    assert.equal(err.cause.message, 'user gave up');
    return true;
  });
  // Frames are handled in order: once this reply is here, the cancelWait was too.
  await conn.start('sync');
  await t.step('validate').addContext({ items: 1 }).success();
  // Had the first wait stayed alive it would have taken the one grant validate enables.
  const second = await t.waitFor('pay', { timeout: 10_000 });
  assert.equal(second.decision, 'allowed');
  // An already aborted signal refuses before sending.
  await assert.rejects(t.waitFor('pay', { signal: AbortSignal.abort() }), WaitCancelledError);
});

test('waitForValidation: passed, violated and unvalidated', async () => {
  const conn = await dial();
  const t = await conn.start('validation', { contract: 'order_flow' });
  const v = await t.step('validate').addContext({ items: 1 }).success();
  const passed = await t.waitForValidation('validate', v.stepId, { timeout: 5000 });
  assert.equal(passed.decision, 'passed');
  assert.equal(passed.stepId, v.stepId);

  const shipped = await t.step('ship').success(); // skips pay (and is the warehouse's): violated
  await assert.rejects(t.waitForValidation('ship', shipped.stepId, { timeout: 5000 }), (err) => {
    assert.ok(err instanceof ValidationViolatedError);
    assert.equal(err.code, 'validation_violated');
    assert.equal(err.stepId, shipped.stepId);
    assert.ok(err.violations.length > 0, 'the violations come with the error');
    return true;
  });

  const free = await conn.start('validation-free');
  const s = await free.step('anything').success();
  await assert.rejects(free.waitForValidation('anything', s.stepId, { timeout: 5000 }),
    (err) => err instanceof ValidationUnavailableError && err.decision === 'unvalidated' && err.code === 'validation_unavailable');
});

test('success(msg, { waitFor: true }) returns the verdict, or throws a violation with the recorded step', async () => {
  const conn = await dial();
  const t = await conn.start('verdict', { contract: 'order_flow' });
  const ok = await t.step('validate').addContext({ items: 2 }).success('checked', { waitFor: true });
  assert.equal(ok.verdict.decision, 'passed');
  assert.equal(ok.verdict.stepId, ok.stepId);
  assert.equal(ok.validation, null, 'the verdict replaces the raw validation');

  // A duplicate report has no verdict in its reply: the SDK asks for that of the recorded attempt.
  const dup = await t.step('validate').addContext({ items: 2 }).success('again', { waitFor: true });
  assert.equal(dup.duplicate, true);
  assert.equal(dup.stepId, ok.stepId);
  assert.equal(dup.verdict.decision, 'passed');

  const bad = await conn.start('verdict-bad', { contract: 'order_flow' });
  await assert.rejects(bad.step('pay').failed('declined', { waitFor: true }), (err) => {
    assert.ok(err instanceof ValidationViolatedError);
    assert.match(err.step.stepId, UUID, 'the step was recorded');
    assert.equal(err.step.status, 'failed');
    assert.match(err.message, /was recorded .* but violated its contract/);
    return true;
  });
  assert.equal((await conn.stepHistory({ threadId: bad.threadId, stepName: 'pay' })).length, 1);

  const free = await conn.start('verdict-free');
  await assert.rejects(free.step('x').success(undefined, { waitFor: true }), ValidationUnavailableError);
});

test('waits are checked before sending', async () => {
  const conn = await dial();
  const t = await conn.start('bad-waits');
  for (const timeout of [0, -1, 300_001, NaN, '5']) {
    await assert.rejects(t.waitFor('x', { timeout }), { code: 'invalid_argument' });
  }
  await assert.rejects(t.waitFor(''), { code: 'invalid_argument' });
  await assert.rejects(t.waitFor('x', { invocationId: 'i'.repeat(129) }), { code: 'invalid_argument' });
  await assert.rejects(t.waitForValidation('x', ''), { code: 'invalid_argument' });
  await assert.rejects(t.waitFor('x', { signal: {} }), { code: 'invalid_argument' });
});

test('thread(key): one thread per key, created once and resumed with what was stored', async () => {
  const conn = await dial();
  const key = `order-${Date.now()}-${Math.random()}`;
  const t = await conn.thread(key, { contract: 'order_flow', label: 'Order K', refs: { orderId: 'K-1' }, tags: ['keyed'] });
  assert.equal(t.created, true);
  assert.equal(t.threadKey, key);
  assert.match(t.threadId, UUID);
  assert.equal(t.label, 'Order K');
  assert.equal(t.contractName, 'order_flow');
  assert.equal(t.contractVersion, 1);
  assert.deepEqual(t.tags, ['keyed']);
  assert.equal(t.refs.orderId, 'K-1');
  await t.step('validate').addContext({ items: 1 }).success();

  // Another connection of the same service resumes it; its options are ignored.
  const other = await dial({ apiKey: conn._apiKey });
  const again = await other.thread(`  ${key} `, { label: 'ignored', refs: { orderId: 'other' } });
  assert.equal(again.threadId, t.threadId);
  assert.equal(again.created, false);
  assert.equal(again.label, 'Order K');
  assert.equal(again.refs.orderId, 'K-1');
  const pay = await again.step('pay').success();
  assert.equal(pay.duplicate, false);

  await assert.rejects(other.thread(key, { contract: 'returns_flow' }), { code: 'contract_conflict' });

  // Concurrent first calls for a new key agree on one thread.
  const fresh = `fresh-${Date.now()}-${Math.random()}`;
  const both = await Promise.all([conn.thread(fresh), other.thread(fresh)]);
  assert.equal(both[0].threadId, both[1].threadId);
  assert.deepEqual(both.map((x) => x.created).sort(), [false, true]);

  await both[0].cancel('done with it');
  await assert.rejects(conn.thread(fresh), { code: 'thread_closed' });
});

test('thread keys and options are checked before sending', async () => {
  const conn = await dial();
  await assert.rejects(conn.thread(''), { code: 'invalid_argument' });
  await assert.rejects(conn.thread('   '), { code: 'invalid_argument' });
  await assert.rejects(conn.thread('é'.repeat(513)), { code: 'invalid_argument', message: /1024 bytes/ });
  await assert.rejects(conn.thread('k', { contractName: 'x' }), { code: 'invalid_argument', message: /unknown thread\(\) options: contractName/ });
  await assert.rejects(conn.thread('k', { tags: [''] }), { code: 'invalid_argument' });
  // 1024 bytes exactly is accepted.
  const t = await conn.thread('k'.repeat(1024));
  assert.equal(t.threadKey.length, 1024);
  // threadById is the handle for a known id; nothing is sent.
  assert.equal(conn.threadById(t.threadId).threadId, t.threadId);
});
