// The SDK against a real engine started on loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { connect, ThreadengineError } from '../src/index.js';
import { GraphQLClient } from '../src/reader.js';
import { startEngine, applyContract, serviceAccountKey } from './helpers/engine.js';
import { startPrefixProxy } from './helpers/proxy.js';
import { waitFor, closedPort, UUID, ORDER_FLOW } from './helpers/util.js';

let engine;
const open = [];

before(async () => {
  engine = await startEngine();
  await applyContract(engine, ORDER_FLOW);
});

after(async () => {
  await Promise.all(open.map((c) => c.close()));
  await engine?.stop();
});

async function dial(options = {}) {
  const c = await connect({ engineUrl: engine.url, apiKey: engine.apiKey, serviceName: 'checkout-service', ...options });
  open.push(c);
  return c;
}

// dialAs connects as a new member service account: a principal of its own,
// whose notifications no other test's connection can take.
async function dialAs(name) {
  return dial({ apiKey: await serviceAccountKey(engine, name), serviceName: `${name}-service` });
}

test('write a thread, then read it back', async () => {
  const conn = await dial();
  assert.equal(conn.wsUrl, engine.url.replace('http://', 'ws://') + '/threads');
  assert.equal(conn.graphqlUrl, engine.url + '/graphql');
  assert.ok(conn.ownerId);

  const t = await conn.start('Order-1', { refs: { orderId: 'O-1' }, tags: ['e2e'] });
  assert.match(t.threadId, UUID);

  const v1 = await t.step('validate').addContext({ items: 3 }).subStep('inner', { x: 1 }).success('ok');
  assert.equal(v1.status, 'success');
  assert.equal(v1.duplicate, false);
  assert.match(v1.stepId, UUID);

  const p1 = await t.step('pay').addContext({ amount: 5 }).failed({ error: 'gateway timeout' });
  const p2 = await t.step('pay').addContext({ amount: 5 }).success();
  assert.equal(p1.idempotencyKey, p2.idempotencyKey, 'same context, same automatic key');
  assert.equal(p2.retryCount, 1);
  const again = await t.step('pay').addContext({ amount: 5 }).success();
  assert.equal(again.duplicate, true, 'a completed step is not recorded twice');

  const ship = await t.step('ship').idempotencyKey('ship-1').success();
  assert.equal(ship.idempotencyKey, 'ship-1');
  const n1 = await t.step('notify').addContext({ to: 'a@example.com' }).error({ error: 'mailer down' });
  assert.equal(n1.status, 'error');
  assert.equal(n1.duplicate, false);
  // error() is a failure to the engine: the same step again is a retry, not a duplicate.
  const n2 = await t.step('notify').addContext({ to: 'a@example.com' }).success();
  assert.equal(n2.duplicate, false);
  assert.equal(n2.retryCount, 1);
  assert.equal(n2.idempotencyKey, n1.idempotencyKey);
  await t.addRefs({ tracking: 'TR-1' });
  const end = await t.complete('done');
  assert.equal(end.status, 'completed');
  assert.ok(end.endedAt);

  const view = await conn.getThread(t.threadId);
  assert.equal(view.status, 'completed');
  assert.equal(view.refs.orderId, 'O-1');
  assert.equal(view.refs.label, 'Order-1');
  assert.equal(view.refs.tracking, 'TR-1');

  const steps = await view.steps();
  assert.deepEqual(steps.map((s) => s.stepName), ['validate', 'pay', 'ship', 'notify']);
  const [pay] = await view.steps('pay');
  assert.equal(pay.retryCount, 1);
  assert.equal(pay.lastExecution.status, 'success');
  const history = await pay.history();
  assert.deepEqual(history.map((h) => h.status), ['success', 'failed'], 'newest first');
  assert.equal(history[1].error, 'gateway timeout');
  assert.equal(history[1].context.amount, '5');
  const payByName = await view.history('pay');
  assert.deepEqual(payByName.map((h) => [h.attempt, h.status]), [[2, 'success'], [1, 'failed']]);
  assert.equal(payByName[1].error, 'gateway timeout');
  const notify = await view.history('notify');
  assert.deepEqual(notify.map((h) => h.status), ['success', 'error'], 'the error() attempt is stored with status error');
  assert.equal(notify[1].error, 'mailer down');
  assert.equal(notify[1].context.to, 'a@example.com');
  assert.deepEqual(await view.history('no-such-step'), []);

  const [validate] = await view.steps({ stepName: 'validate' });
  const subs = await validate.subSteps();
  assert.equal(subs.length, 1);
  assert.equal(subs[0].name, 'inner');
  assert.deepEqual(subs[0].payload, { x: 1 });

  const shipped = await view.steps('ship:ship-1');
  assert.equal(shipped.length, 1);

  const byRef = await conn.threadsByRef({ refKey: 'orderId', refValue: 'O-1' });
  assert.equal(byRef.totalCount, 1);
  assert.equal(byRef.threads[0].id, t.threadId);
  assert.equal((await conn.getThreadByRef({ refKey: 'orderId', refValue: 'O-1' })).id, t.threadId);
  assert.equal((await conn.getThreadsByRef({ refKey: 'orderId', refValue: 'O-1' })).length, 1);
  assert.equal(await conn.getThreadByRef({ refKey: 'orderId', refValue: 'no-such-order' }), null);

  const integrity = await conn.verifyIntegrity(t.threadId);
  assert.equal(integrity.verified, true);
  assert.equal(integrity.totalEvents, 6, 'validate, pay twice, ship, notify twice');
  const { lastVerifiedAt, ...fromView } = await view.verifyIntegrity();
  assert.ok(lastVerifiedAt);
  assert.deepEqual(fromView, { verified: true, totalEvents: 6, brokenAt: null, error: null });

  const attempts = await conn.stepHistory({ threadId: t.threadId, stepName: 'pay' });
  assert.equal(attempts.length, 2);

  const all = await view.getCompleteData();
  assert.equal(all.id, t.threadId);
  assert.equal(all.refs.orderId, 'O-1');
  assert.deepEqual(all.steps.map((s) => [s.stepName, s.history.length]), [['validate', 1], ['pay', 2], ['ship', 1], ['notify', 2]]);
  assert.deepEqual(all.steps[1].history.map((h) => h.status), ['success', 'failed']);
  assert.deepEqual(all.validationResults, [], 'a free-form thread has no validations');
  const onePay = await conn.getCompleteData(t.threadId, { stepName: 'pay', stepHistoryLimit: 1 });
  assert.deepEqual(onePay.steps.map((s) => [s.stepName, s.history.map((h) => h.status)]), [['pay', ['success']]]);
});

test('steps() and getCompleteData read a 60-step thread, one of its steps with 50 attempts, within the cost limit', async () => {
  const conn = await dial();
  const t = await conn.start('big-complete');
  const names = Array.from({ length: 60 }, (_, i) => `s${i}`);
  await Promise.all(names.map((n) => t.step(n).idempotencyKey('k').failed('no')));
  await Promise.all(Array.from({ length: 49 }, () => t.step('s0').idempotencyKey('k').failed('again')));
  const view = await conn.getThread(t.threadId);
  const states = await view.steps();
  assert.deepEqual(states.map((s) => s.stepName), names, 'every step, in order');
  assert.equal(states[0].retryCount, 49);
  assert.equal(states[0].lastExecution.status, 'failed');
  const all = await conn.getCompleteData(t.threadId);
  assert.equal(all.steps.length, 60);
  assert.equal(all.steps.find((s) => s.stepName === 's0').history.length, 50);
});

test('linked threads form a chain', async () => {
  const conn = await dial();
  const parent = await conn.start('parent');
  const child = await conn.start('child');
  await child.linkThread(parent.threadId);
  const chain = await conn.getThreadChain(child.threadId);
  assert.deepEqual(chain.map((x) => x.id), [child.threadId, parent.threadId]);
  assert.deepEqual((await (await conn.getThread(child.threadId)).chain(1)).map((x) => x.id), [child.threadId], 'maxDepth 1 is the root alone');
});

test('notifications reach the handler of their own event type', async () => {
  // A principal of its own: the engine keeps every principal's undelivered
  // notifications (24 h) and would hand this connection other tests' ones.
  const conn = await dialAs('checkout'); // its service name makes it the checkout party
  const got = { success: [], failed: [], violated: [], passed: [], completed: [], cancelled: [], any: [] };
  await conn.subscribe('step.success', 'pay', (n) => { got.success.push(n); n.ack(); });
  await conn.subscribe('step.failed', 'pay', (n) => { got.failed.push(n); n.ack(); });
  await conn.subscribe('rule.violated', 'pay', (n) => { got.violated.push(n); n.ack(); });
  await conn.subscribe('rule.passed', 'validate', (n) => { got.passed.push(n); n.ack(); });
  await conn.subscribe('thread.completed', (n) => { got.completed.push(n); n.ack(); });
  await conn.subscribe('thread.cancelled', (n) => { got.cancelled.push(n); n.ack(); });
  await conn.subscribe('*', 'validate', (n) => { got.any.push(n); n.ack(); });

  const bad = await conn.start('Order-N', { contract: 'order_flow' });
  assert.equal(bad.contractName, 'order_flow');
  // pay before validate: not an entry point, so the rule is violated.
  await bad.step('pay').addContext({ amount: 1 }).failed('declined');
  await waitFor(() => got.failed.length === 1 && got.violated.length === 1, 'step.failed and rule.violated for pay');
  assert.equal(got.failed[0].event, 'step.failed');
  assert.equal(got.failed[0].isFailed(), true);
  assert.equal(got.violated[0].event, 'rule.violated');
  assert.equal(got.violated[0].isViolated(), true);
  assert.equal(got.success.length, 0, 'a failed step is not announced as step.success');

  const good = await conn.start('Order-P', { contract: 'order_flow' });
  await good.step('validate').addContext({ items: 2 }).success();
  await waitFor(() => got.passed.length === 1 && got.any.length === 2, 'rule.passed and both events for validate');
  assert.deepEqual(got.any.map((n) => n.event).sort(), ['rule.passed', 'step.success']);
  assert.equal(got.passed[0].threadId, good.threadId);

  const free = await conn.start('to-cancel');
  await free.cancel('customer changed mind');
  await waitFor(() => got.cancelled.length === 1, 'thread.cancelled');
  assert.equal(got.cancelled[0].threadId, free.threadId);
  assert.equal(got.completed.length, 0, 'a cancelled thread is not announced as completed');
});

test('a subscribed connection hears thread.completed for the thread it completes', async () => {
  // A principal of its own: the hub gives each notification to one session of
  // the thread's owner, so no other test's connection can take it.
  const conn = await dialAs('completer');
  const completed = [];
  const cancelled = [];
  await conn.subscribe('thread.completed', (n) => { completed.push(n); n.ack(); });
  await conn.subscribe('thread.cancelled', (n) => { cancelled.push(n); n.ack(); });
  const other = await conn.start('left open');
  const t = await conn.start('to-complete');
  const end = await t.complete('all done');
  assert.equal(end.status, 'completed');
  await waitFor(() => completed.length === 1, 'thread.completed');
  const [n] = completed;
  assert.equal(n.event, 'thread.completed');
  assert.equal(n.threadId, t.threadId);
  assert.notEqual(n.threadId, other.threadId);
  assert.equal(n.ownerId, conn.ownerId);
  assert.equal(cancelled.length, 0, 'a completed thread is not announced as cancelled');
});

test('ack() reaches the engine: with maxInFlight 1 the next notification waits for it', async () => {
  const conn = await dial({ maxInFlight: 1 });
  const got = [];
  await conn.subscribe('step.success', 'ack-gated', (n) => { got.push(n); }); // acked by hand below
  const a = await conn.start('ack-a');
  const b = await conn.start('ack-b');
  await a.step('ack-gated').success();
  await waitFor(() => got.length === 1, 'the first notification');
  // The engine publishes before it replies, so the second notification is
  // waiting in the engine once this resolves; unacknowledged, the first fills
  // the only slot.
  await b.step('ack-gated').success();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(got.length, 1, 'nothing more is pushed while the first notification is unacknowledged');
  assert.equal(got[0].threadId, a.threadId);
  got[0].ack();
  assert.equal(got[0].acked, true);
  // The engine redelivers only after 30 s, so arriving within waitFor's 10 s
  // means the ack freed the slot.
  await waitFor(() => got.length === 2, 'the second notification, released by the ack');
  assert.equal(got[1].threadId, b.threadId);
  got[1].ack();
});

test('invitations: another principal joins with the token, with the granted access level', async () => {
  const owner = await dial();
  const partner = await dialAs('partner');
  assert.notEqual(partner.ownerId, owner.ownerId);

  const t = await owner.start('shared', { refs: { orderId: 'S-1' } });
  await t.step('secret').addContext({ card: '4242' }, true).success();

  const observe = await t.inviteParty({ role: 'auditor', accessLevel: 'observer', expiresIn: '1h' });
  assert.equal(observe.accessLevel, 'observer');
  assert.ok(observe.expiresAt > new Date());
  const seen = await partner.join(observe.threadToken);
  assert.equal(seen.threadId, t.threadId);
  assert.equal(seen.accessLevel, 'observer');
  // Reads are company-wide (one company per engine); writes follow access levels.
  assert.equal((await partner.getThread(t.threadId)).refs.orderId, 'S-1');
  await assert.rejects(seen.step('not allowed').success(), { code: 'insufficient_access' });

  const [secret] = await (await owner.getThread(t.threadId)).steps('secret');
  assert.deepEqual(secret.latestContext, { card: '4242', private_card: '4242' });

  const work = await t.inviteParty({ role: 'warehouse', accessLevel: 'participant' });
  const joined = await partner.join(work.threadToken);
  assert.equal(joined.accessLevel, 'participant');
  const r = await joined.step('picked').success();
  assert.equal(r.duplicate, false);
});

test('validation results are readable from the connection and the thread', async () => {
  const conn = await dial();
  const t = await conn.start('Order-V', { contract: 'order_flow:1' });
  assert.equal(t.role, 'checkout');
  await t.step('validate').addContext({ items: 1 }).success();
  await t.step('ship').success(); // skips pay: invalid transition
  const all = await conn.getValidationResults(t.threadId);
  assert.equal(all.length, 2);
  const ship = await conn.getValidationResults(t.threadId, { stepName: 'ship' });
  assert.equal(ship.length, 1);
  assert.equal(ship[0].overallStatus, 'violated');
  assert.ok(ship[0].validations.some((v) => v.type === 'invalid_transition'), JSON.stringify(ship[0].validations));
  const viaView = await (await conn.getThread(t.threadId)).validationResults({ limit: 1 });
  assert.equal(viaView.length, 1);
});

test('engine errors carry the engine\'s code', async () => {
  const conn = await dial();
  const t = await conn.start('Order-E', { contract: 'order_flow' });
  await assert.rejects(t.complete(), (err) => err instanceof ThreadengineError && err.code === 'invalid_status_transition' && err.action === 'threadEnd');
  const free = await conn.start('closed');
  await free.cancel();
  await assert.rejects(free.step('late').success(), { code: 'thread_closed' });
  await assert.rejects(conn.getThread('00000000-0000-4000-8000-000000000000'), { code: 'not_found' });
  await assert.rejects(conn.start({ contract: 'no_such_contract' }), (err) => {
    assert.ok(err instanceof ThreadengineError);
    assert.equal(err.code, 'not_found');
    assert.equal(err.action, 'startThread');
    assert.match(err.message, /contract no_such_contract not found/);
    return true;
  });
  // The connection is still usable after errors.
  const ok = await conn.start('after errors');
  assert.match(ok.threadId, UUID);
});

test('a message over 1 MiB is refused before sending; the connection keeps working', async () => {
  const conn = await dial();
  const t = await conn.start('big');
  const big = t.step('upload').addContext({ blob: 'x'.repeat(1_100_000) });
  await assert.rejects(big.success(), { code: 'invalid_argument', message: /1048576 bytes/ });
  const r = await t.step('small').success();
  assert.equal(r.status, 'success');
});

test('the complexity limit surfaces the engine\'s code and numbers', async () => {
  const conn = await dial();
  const q = '{ threads(limit: 100) { threads { notifications(options: { limit: 100 }) { message } } } }';
  await assert.rejects(conn.query(q), (err) => {
    assert.equal(err.code, 'COMPLEXITY_LIMIT_EXCEEDED');
    assert.equal(err.limit, 1000);
    assert.ok(err.complexity > 1000, `complexity ${err.complexity}`);
    assert.equal(err.status, 422);
    assert.match(err.message, new RegExp(`complexity ${err.complexity}, which exceeds the limit of 1000`));
    return true;
  });
  const ok = await conn.query('{ threads(limit: 1) { totalCount } }');
  assert.ok(ok.extensions.cost > 0);
  await assert.rejects(conn.query('{ nope }'), (err) => {
    assert.equal(err.code, 'GRAPHQL_VALIDATION_FAILED');
    assert.equal(err.status, 422);
    assert.match(err.message, /nope/);
    return true;
  });
});

test('a bad API key is refused clearly, on both transports', async () => {
  await assert.rejects(connect({ engineUrl: engine.url, apiKey: 'td_not-a-key' }), (err) => {
    assert.equal(err.code, 'invalid_api_key');
    assert.match(err.message, /refused the API key/);
    return true;
  });
  const gql = new GraphQLClient(engine.url + '/graphql', 'td_not-a-key', fetch);
  await assert.rejects(gql.request('{ threads { totalCount } }'), { code: 'invalid_api_key', status: 401 });
});

test('a revoked key fails GraphQL reads with invalid_api_key', async () => {
  const created = await engine.admin('/v1/api-keys', { method: 'POST', body: JSON.stringify({ name: 'sdk-revoked' }) });
  const conn = await dial({ apiKey: created.key });
  await engine.admin(`/v1/api-keys/${created.api_key.id}`, { method: 'DELETE' });
  await assert.rejects(conn.threads(), { code: 'invalid_api_key' });
});

test('an unreachable engine is reported as engine_unreachable', async () => {
  const port = await closedPort();
  await assert.rejects(connect({ engineUrl: `http://127.0.0.1:${port}`, apiKey: 'td_x', reconnect: false }), (err) => {
    assert.equal(err.code, 'engine_unreachable');
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}/threads`));
    return true;
  });
  const gql = new GraphQLClient(`http://127.0.0.1:${port}/graphql`, 'td_x', fetch);
  await assert.rejects(gql.request('{ threads { totalCount } }'), { code: 'engine_unreachable' });
});

test('an engine that accepts TCP but never answers the handshake times out without crashing', async () => {
  const sockets = [];
  const silent = net.createServer((s) => sockets.push(s));
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  try {
    await assert.rejects(connect({ engineUrl: `http://127.0.0.1:${silent.address().port}`, apiKey: 'td_x', connectTimeoutMs: 200 }),
      { code: 'timeout', message: /did not answer connect within 200 ms/ });
    // The ws package reports the abandoned handshake as an 'error' event a tick later.
    await new Promise((r) => setTimeout(r, 100));
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  }
});

test('a GraphQL request nobody answers times out with timeout', async () => {
  const sockets = [];
  const silent = net.createServer((s) => sockets.push(s)); // accepts, never answers
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  try {
    const gql = new GraphQLClient(`http://127.0.0.1:${silent.address().port}/graphql`, 'td_x', fetch, 200);
    await assert.rejects(gql.request('{ threads { totalCount } }'), { code: 'timeout', message: /within 200 ms/ });
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  }
});

test('engineUrl with a reverse-proxy prefix reaches the engine for writes and reads', async () => {
  const proxy = await startPrefixProxy(engine.url.replace('http://', ''), '/engine');
  try {
    const conn = await connect({ engineUrl: proxy.url, apiKey: engine.apiKey, serviceName: 'proxied-service' });
    assert.equal(conn.wsUrl, proxy.url.replace('http://', 'ws://') + '/threads');
    const t = await conn.start('behind a proxy', { refs: { via: 'prefix' } });
    await t.step('hop').success();
    const view = await conn.getThread(t.threadId);
    assert.equal(view.refs.via, 'prefix');
    assert.equal((await view.steps()).length, 1);
    await conn.close();
    assert.equal(conn.state, 'closed');
  } finally {
    await proxy.stop();
  }
});

test('close() settles everything and later calls fail with connection_closed', async () => {
  const conn = await connect({ engineUrl: engine.url, apiKey: engine.apiKey });
  const t = await conn.start('closing');
  await conn.close();
  assert.equal(conn.state, 'closed');
  await assert.rejects(t.step('after').success(), { code: 'connection_closed' });
  await conn.close(); // idempotent
});
