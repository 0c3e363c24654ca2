// Reconnection through a TCP proxy that cuts connections at chosen moments.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, WaitTimeoutError } from '../src/index.js';
import { startEngine, serviceAccountKey, applyContract } from './helpers/engine.js';
import { startTCPProxy } from './helpers/proxy.js';
import { waitFor, nextEvent, UUID, ORDER_FLOW } from './helpers/util.js';

let engine;
let proxy;
let reader;
const open = [];

before(async () => {
  engine = await startEngine();
  await applyContract(engine, ORDER_FLOW);
  proxy = await startTCPProxy(engine.url.replace('http://', ''));
  // Reads go straight to the engine, so they work while the proxy misbehaves.
  reader = await connect({ engineUrl: engine.url, apiKey: engine.apiKey });
  open.push(reader);
});

after(async () => {
  await Promise.all(open.map((c) => c.close()));
  await proxy?.stop();
  await engine?.stop();
});

let dialed = 0;

// dialProxy connects through the proxy as a principal of its own: another
// test's undelivered notifications would reach it on connect, and its acks
// are client frames that dropAfterNextRequest would cut instead of the
// request under test.
async function dialProxy(options = {}) {
  const apiKey = options.apiKey ?? await serviceAccountKey(engine, `flaky-${++dialed}`);
  const c = await connect({
    engineUrl: `http://${proxy.addr}`, apiKey, serviceName: 'flaky-service',
    reconnect: { initialDelayMs: 20, maxDelayMs: 200 }, ...options,
  });
  open.push(c);
  return c;
}

// alone closes every connection earlier tests opened through the proxy,
// so none of them (a late ack, a reconnect attempt whose connect frame
// would be the "next request") is on the proxy when a test cuts one.
async function alone() {
  const others = open.splice(1);
  await Promise.all(others.map((c) => c.close()));
}

async function attempts(threadId, stepName) {
  return reader.stepHistory({ threadId, stepName });
}

test('after a drop the connection comes back and keeps its subscriptions', async () => {
  const conn = await dialProxy();
  const seen = [];
  await conn.subscribe('step.success', 'after-drop', (n) => { seen.push(n.stepName); n.ack(); });
  const t = await conn.start('drop-1');
  await t.step('before-drop').success();

  const back = nextEvent(conn, 'reconnected');
  proxy.dropAll();
  await back;
  assert.equal(conn.state, 'open');

  const r = await t.step('after-drop').success();
  assert.equal(r.duplicate, false);
  await waitFor(() => seen.length === 1, 'the notification for a step recorded after the reconnect');
  assert.equal((await reader.getThread(t.threadId)).id, t.threadId);
  const before = await attempts(t.threadId, 'before-drop');
  assert.equal(before.length, 1, 'the step recorded before the drop has exactly one attempt');
  assert.equal(before[0].status, 'success');
  assert.equal(before[0].attempt, 1);
  assert.equal((await attempts(t.threadId, 'after-drop')).length, 1);
});

test('reconnect delays grow while attempts keep failing, up to maxDelayMs, and start over after a success', async () => {
  const initialDelayMs = 20;
  const maxDelayMs = 160;
  const conn = await dialProxy({ reconnect: { initialDelayMs, maxDelayMs } });
  const events = [];
  const off = conn.on('reconnecting', (e) => events.push(e));
  proxy.refuse(true);
  proxy.dropAll();
  // Every attempt is refused by the proxy: attempts 1–4 double the window, 5–6 stay at the cap.
  await waitFor(() => events.length >= 6, 'six reconnect attempts');
  const back = nextEvent(conn, 'reconnected');
  proxy.refuse(false);
  await back;
  off();
  const delays = events.slice(0, 6).map((e) => e.delayMs);
  assert.deepEqual(events.slice(0, 6).map((e) => e.attempt), [1, 2, 3, 4, 5, 6]);
  events.slice(0, 6).forEach(({ attempt, delayMs }) => {
    // Jitter picks a delay in [window/2, window]; the window doubles each attempt up to the cap.
    const window = Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1));
    assert.ok(delayMs >= window / 2 && delayMs <= window, `attempt ${attempt}: ${delayMs} ms outside [${window / 2}, ${window}] (${delays})`);
  });
  // Consecutive windows overlap only at their edges, so jitter cannot make a later delay shorter.
  for (let i = 1; i < 4; i++) assert.ok(delays[i] >= delays[i - 1], `delays do not grow: ${delays}`);
  assert.ok(delays[3] >= 4 * delays[0], `delays do not grow: ${delays}`);
  assert.ok(delays.every((d) => d <= maxDelayMs), `a delay above maxDelayMs: ${delays}`);

  // After a successful reconnect the next drop starts from the first window again.
  const next = nextEvent(conn, 'reconnecting');
  const again = nextEvent(conn, 'reconnected');
  proxy.dropAll();
  const first = await next;
  assert.equal(first.attempt, 1);
  assert.ok(first.delayMs <= initialDelayMs, `after a success the delay restarts: ${first.delayMs} ms`);
  await again;
  assert.equal(conn.state, 'open');
});

test('a notification raised while disconnected arrives after the reconnect', async () => {
  const apiKey = await serviceAccountKey(engine, 'away');
  const conn = await dialProxy({ apiKey });
  const direct = await connect({ engineUrl: engine.url, apiKey });
  open.push(direct);
  const heard = [];
  await conn.subscribe('step.success', 'while-away', (n) => { heard.push(n.threadId); n.ack(); });
  const t = await conn.start('away');
  proxy.refuse(true);
  const gone = nextEvent(conn, 'disconnected');
  proxy.dropAll();
  await gone;
  // Another connection of the same principal (with no subscriptions) records the step meanwhile.
  await direct.threadById(t.threadId).step('while-away').success();
  const back = nextEvent(conn, 'reconnected');
  proxy.refuse(false);
  await back;
  await waitFor(() => heard.length === 1, 'the held notification');
  assert.deepEqual(heard, [t.threadId]);
});

for (const status of ['failed', 'success']) {
  test(`a ${status} step whose reply was lost is recorded once`, async () => {
    await alone();
    const conn = await dialProxy();
    const t = await conn.start(`lost-reply-${status}`);
    proxy.refuse(true);
    proxy.dropAfterNextRequest();
    const pending = t.step('pay').addContext({ amount: 7 }).stop(status, 'first try');
    // The engine got and committed the step; its reply never arrived.
    await waitFor(async () => (await attempts(t.threadId, 'pay')).length === 1, 'the engine to commit the step');
    proxy.refuse(false);
    const r = await pending;
    assert.equal(r.duplicate, true, 're-sent after the reconnect, recognised as the same attempt');
    assert.equal(r.retryCount, 0);
    const h = await attempts(t.threadId, 'pay');
    assert.equal(h.length, 1, 'one attempt, not two');
    const [state] = await (await reader.getThread(t.threadId)).steps('pay');
    assert.equal(state.retryCount, 0);

    if (status === 'failed') {
      // A genuine retry is still a retry.
      const retry = await t.step('pay').addContext({ amount: 7 }).success();
      assert.equal(retry.duplicate, false);
      assert.equal(retry.retryCount, 1);
      assert.equal((await attempts(t.threadId, 'pay')).length, 2);
    }
  });
}

test('requests made while disconnected are sent, in order, once the engine is back', async () => {
  const conn = await dialProxy();
  const t = await conn.start('queued');
  proxy.refuse(true);
  const gone = nextEvent(conn, 'disconnected');
  proxy.dropAll();
  await gone;
  assert.equal(conn.state, 'reconnecting');
  const steps = [t.step('q1').success(), t.step('q2').success(), t.step('q3').success()];
  const started = conn.start('started while disconnected');
  await new Promise((r) => setTimeout(r, 100));
  proxy.refuse(false);
  const results = await Promise.all(steps);
  assert.deepEqual(results.map((r) => r.duplicate), [false, false, false]);
  assert.match((await started).threadId, UUID);
  const states = await (await reader.getThread(t.threadId)).steps();
  assert.deepEqual(states.map((s) => s.stepName), ['q1', 'q2', 'q3']);
});

test('startThread in flight when the connection drops fails with connection_lost', async () => {
  await alone();
  const conn = await dialProxy();
  proxy.dropAfterNextRequest();
  await assert.rejects(conn.start('maybe started'), (err) => {
    assert.equal(err.code, 'connection_lost');
    assert.match(err.message, /may or may not have been started/);
    return true;
  });
  await nextEvent(conn, 'reconnected');
  assert.match((await conn.start('after')).threadId, UUID);
});

test('a revoked key stops reconnecting and fails what is pending', async () => {
  const created = await engine.admin('/v1/api-keys', { method: 'POST', body: JSON.stringify({ name: 'sdk-reconnect' }) });
  const conn = await dialProxy({ apiKey: created.key });
  const t = await conn.start('revoked');
  // The engine may close the revoked key's socket itself before the DELETE
  // answers (it does at once on PostgreSQL), so both events are awaited from
  // before the revocation, and reconnects are refused from then on.
  proxy.refuse(true);
  const closed = nextEvent(conn, 'closed');
  const disconnected = nextEvent(conn, 'disconnected');
  await engine.admin(`/v1/api-keys/${created.api_key.id}`, { method: 'DELETE' });
  proxy.dropAll();
  await disconnected;
  const pending = t.step('never').success();
  proxy.refuse(false);
  const err = await closed;
  assert.equal(err.code, 'invalid_api_key');
  await assert.rejects(pending, { code: 'invalid_api_key' });
  assert.equal(conn.state, 'closed');
});

test('with reconnect: false a drop fails pending requests and closes', async () => {
  await alone();
  const conn = await dialProxy({ reconnect: false });
  const t = await conn.start('no-reconnect');
  proxy.dropAfterNextRequest();
  await assert.rejects(t.step('lost').success(), { code: 'connection_lost' });
  assert.equal(conn.state, 'closed');
  await assert.rejects(t.step('later').success(), { code: 'connection_lost' });
});

test('a wait pending when the socket dies is re-issued after the reconnect and answered', async () => {
  await alone();
  const apiKey = await serviceAccountKey(engine, 'waiter');
  const conn = await dialProxy({ apiKey });
  const direct = await connect({ engineUrl: engine.url, apiKey, serviceName: 'checkout-service' });
  open.push(direct);
  const t = await conn.start('wait-across-drop', { contract: 'order_flow', role: 'checkout' });
  const grant = t.waitFor('pay', { timeout: 60_000 });
  // The wait reached the engine (a later request on the same socket was answered) before the cut.
  await conn.start('sync');
  const back = nextEvent(conn, 'reconnected');
  proxy.dropAll();
  await back;
  // Another connection of the principal records the predecessor: the
  // re-issued wait is answered allowed (the first one died with its socket).
  await direct.threadById(t.threadId).step('validate').addContext({ items: 1 }).success();
  const g = await grant;
  assert.equal(g.decision, 'allowed');
  const paid = await t.step('pay').success();
  assert.equal(paid.invocationId, g.invocationId);
  assert.equal(paid.duplicate, false);
});

test('a wait whose deadline passes while disconnected fails with wait_timed_out', async () => {
  await alone();
  const conn = await dialProxy();
  const t = await conn.start('wait-while-away', { contract: 'order_flow', role: 'checkout' });
  proxy.refuse(true);
  const gone = nextEvent(conn, 'disconnected');
  proxy.dropAll();
  await gone;
  await assert.rejects(t.waitFor('pay', { timeout: 200 }), (err) => err instanceof WaitTimeoutError && err.result === undefined);
  proxy.refuse(false);
  await nextEvent(conn, 'reconnected');
});

test('thread(key) in flight when the socket dies resolves once, to the one thread of the key', async () => {
  await alone();
  const apiKey = await serviceAccountKey(engine, 'keyed');
  const conn = await dialProxy({ apiKey });
  const key = `drop-key-${Date.now()}`;
  proxy.dropAfterNextRequest();
  const t = await conn.thread(key, { label: 'keyed across a drop' });
  assert.equal(t.threadKey, key);
  const direct = await connect({ engineUrl: engine.url, apiKey });
  open.push(direct);
  const again = await direct.thread(key);
  assert.equal(again.threadId, t.threadId, 'the re-sent frame resumed the thread the lost one created');
  assert.equal(again.created, false);
  assert.equal(again.label, 'keyed across a drop');
});

test('a step sent with waitFor:true whose reply was lost gets the verdict of the attempt recorded', async () => {
  await alone();
  const conn = await dialProxy({ serviceName: 'checkout-service' });
  const t = await conn.start('verdict-across-drop', { contract: 'order_flow' });
  proxy.refuse(true);
  proxy.dropAfterNextRequest();
  const pending = t.step('validate').addContext({ items: 1 }).success('ok', { waitFor: true });
  await waitFor(async () => (await attempts(t.threadId, 'validate')).length === 1, 'the engine to commit the step');
  proxy.refuse(false);
  const r = await pending;
  assert.equal(r.duplicate, true, 're-sent after the reconnect, recognised as the same attempt');
  assert.equal(r.verdict.decision, 'passed');
  assert.equal(r.verdict.stepId, r.stepId);
  assert.equal((await attempts(t.threadId, 'validate')).length, 1);
});
