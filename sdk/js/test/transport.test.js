import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveWebSocket } from '../src/transport.js';

// test/jssdk runs the suite once per WebSocket implementation and says which
// one this run must be using.
test('the expected WebSocket implementation is in use', async () => {
  const WS = await resolveWebSocket();
  switch (process.env.THREADENGINE_EXPECT_WEBSOCKET) {
    case 'platform':
      assert.equal(WS, globalThis.WebSocket);
      break;
    case 'ws':
      assert.equal(WS, (await import('ws')).WebSocket);
      break;
    default:
      assert.equal(typeof WS, 'function');
  }
});

test('an explicit WebSocket must be a constructor', async () => {
  await assert.rejects(resolveWebSocket('nope'), { code: 'invalid_argument' });
  class Fake {}
  assert.equal(await resolveWebSocket(Fake), Fake);
});
