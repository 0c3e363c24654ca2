import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GraphQLClient } from '../src/reader.js';

// A fetch that answers the scripted responses in order and counts calls.
function scripted(...answers) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push(JSON.parse(init.body));
    const a = answers[Math.min(calls.length - 1, answers.length - 1)];
    return new Response(JSON.stringify(a.body), { status: a.status, headers: a.headers ?? {} });
  };
  return { fetch, calls };
}

const refused = (retryAfter) => ({
  status: 429,
  body: { errors: [{ message: 'the read budget is spent', extensions: { code: 'limit_exceeded', limit: 'graphql_points', retryAfter } }], data: null },
});

test('a read refused for a moment (429 limit_exceeded) is sent again after its retry time', async () => {
  const { fetch, calls } = scripted(refused(0.01), refused(0.01), { status: 200, body: { data: { ok: true } } });
  const c = new GraphQLClient('http://engine/graphql', 'k', fetch, 5_000);
  const r = await c.request('{ ok }');
  assert.deepEqual(r.data, { ok: true });
  assert.equal(calls.length, 3);
});

test('a refusal keeps its retry time and is thrown after the last retry', async () => {
  const { fetch, calls } = scripted(refused(0.001));
  const c = new GraphQLClient('http://engine/graphql', 'k', fetch, 5_000);
  await assert.rejects(c.request('{ ok }'), (err) => err.code === 'limit_exceeded' && err.retryAfterMs === 1 && err.status === 429);
  assert.equal(calls.length, 6); // the first try and 5 retries
});

test('a refusal whose retry time would pass the request timeout is thrown at once', async () => {
  const { fetch, calls } = scripted(refused(60));
  const c = new GraphQLClient('http://engine/graphql', 'k', fetch, 1_000);
  await assert.rejects(c.request('{ ok }'), { code: 'limit_exceeded' });
  assert.equal(calls.length, 1);
});

test('other errors are not retried', async () => {
  const { fetch, calls } = scripted({ status: 422, body: { errors: [{ message: 'too complex', extensions: { code: 'complexity_limit_exceeded' } }] } });
  const c = new GraphQLClient('http://engine/graphql', 'k', fetch, 5_000);
  await assert.rejects(c.request('{ ok }'), { code: 'complexity_limit_exceeded' });
  assert.equal(calls.length, 1);
});
