// Decisions for agents (thread.can, should, next) against a real engine
// whose classifier is a real local chat-completions endpoint.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { ThreadengineError } from '../src/index.js';
import { useEngine } from './helpers/engine.js';

const DECIDE_FLOW = readFileSync(new URL('../../../test/enginetest/decide_flow.feature', import.meta.url), 'utf8');

// The classifier: goals name "order", a note with "thanks" is polite, advice is yes.
let classifierCalls = 0;
const classifier = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    classifierCalls++;
    const user = JSON.parse(body).messages.at(-1).content;
    let answer = { label: 'yes', probability: 0.9 };
    if (user.includes('Which contract action')) answer = { label: 'order', probability: 0.95 };
    else if (user.includes('polite') && !user.includes('thanks')) answer = { label: 'no', probability: 0.9 };
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify(answer) } }] }));
  });
});
const env = {};
before(async () => {
  await new Promise((r) => classifier.listen(0, '127.0.0.1', r));
  env.THREADENGINE_CONTRACTS__CLASSIFIER__URL = `http://127.0.0.1:${classifier.address().port}/v1`;
  env.THREADENGINE_CONTRACTS__CLASSIFIER__MODEL = 'test-model';
});
after(() => new Promise((r) => classifier.close(r)));

const { dial } = useEngine({ env, contracts: [DECIDE_FLOW] });

test('can, should and next answer before and after each step, and never record anything', async () => {
  const conn = await dial('decider');
  const t = await conn.start('decide-1', { contract: 'decide_flow' });

  let next = await t.next();
  assert.equal(next.threadId, t.threadId);
  assert.deepEqual(next.paths, [{ actions: ['order', 'review', 'charge'], status: 'allowed',
    reason: 'first action is eligible at this snapshot; later actions are conditional' }]);
  let d = await t.can('charge');
  assert.equal(d.allowed, false);
  assert.equal(d.status, 'denied');
  assert.equal(d.reason, 'missing required prior steps: [order]');
  assert.deepEqual(d.missingSteps, ['order']);
  assert.equal(d.previousStep, null);
  d = await t.can('order', { order_id: 'O-1' });
  assert.equal(d.allowed, true);
  assert.equal(d.matchedBy, 'exact');
  d = await t.can({ goal: 'place the customer order' });
  assert.equal(d.stepName, 'order');
  assert.equal(d.matchedBy, 'classifier');
  assert.equal(d.allowed, true);

  await t.step('order').addContext({ order_id: 'O-1' }).success();
  d = await t.can('charge');
  assert.equal(d.reason, 'strict transition from "order" to "charge" is not allowed');
  assert.equal(d.previousStep, 'order');
  assert.equal((await t.can('review', { note: 'thanks!' })).allowed, true);
  d = await t.can('review', { note: 'pay up' });
  assert.equal(d.allowed, false);
  assert.deepEqual(d.violations, [{ field: 'note', rule: 'semantic', message: 'semantic field "note" did not satisfy its contract rule' }]);
  const should = await t.should('review');
  assert.deepEqual({ ...should }, { threadId: t.threadId, stepName: 'review', eligible: true, recommendation: 'yes',
    reason: 'classifier selected yes with probability 0.90' });
  assert.equal((await t.should({ action: 'charge' })).recommendation, 'no');
  next = await t.next();
  assert.deepEqual(next.paths.map((p) => p.actions), [['review', 'charge']]);

  await t.step('review').addContext({ note: 'thanks' }).success();
  d = await t.can('charge', { amount: 0, currency: 'JPY', order_id: 'O-1' });
  assert.equal(d.allowed, false);
  assert.match(d.reason, /^content field "amount" violates gt rule/);
  assert.deepEqual(d.violations.map((v) => v.field), ['amount', 'currency']);
  d = await t.can('charge', { amount: 5, currency: 'GBP', order_id: 'O-2' });
  assert.match(d.reason, /content field "order_id" violates equals rule/);
  d = await t.can('charge', { amount: 12.5, currency: 'EUR', order_id: 'O-1' });
  assert.equal(d.allowed, true);
  assert.deepEqual(d.satisfiedSteps, ['order']);

  // Only the two reported steps are recorded.
  const steps = await (await conn.getThread(t.threadId)).steps();
  assert.deepEqual(steps.map((s) => s.stepName).sort(), ['order', 'review']);

  await t.step('charge').addContext({ amount: 5, currency: 'GBP', order_id: 'O-1' }).success();
  d = await t.can('charge');
  assert.equal(d.reason, 'thread is completed');
  assert.deepEqual((await t.next()).paths, []);
  assert.ok(classifierCalls > 0, 'the classifier was asked');
});

test('can refuses what it cannot judge with the engine\'s coded errors', async () => {
  const conn = await dial('decider-errors');
  const t = await conn.start('decide-2', { contract: 'decide_flow' });
  await assert.rejects(t.can('bogus'), (err) => {
    assert.ok(err instanceof ThreadengineError);
    assert.equal(err.code, 'validation_failed');
    assert.match(err.message, /action "bogus" is not defined in the contract/);
    return true;
  });
  await assert.rejects(t.can({ action: 'order', goal: 'order' }), /exactly one of action and goal/);
  await assert.rejects(t.can('order', [1]), /context must be an object/);
  await assert.rejects(t.can('order', { nested: { no: 1 } }), (err) => err.code === 'validation_failed');
  const free = await conn.start('free-form');
  await assert.rejects(free.next(), /thread has no contract/);
});
