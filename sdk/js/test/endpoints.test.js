import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deriveEndpoints, connect, ThreadengineError } from '../src/index.js';

test('endpoints are derived from engineUrl, keeping a proxy prefix', () => {
  const cases = [
    ['http://localhost:8081', 'ws://localhost:8081/threads', 'http://localhost:8081/graphql'],
    ['http://localhost:8081/', 'ws://localhost:8081/threads', 'http://localhost:8081/graphql'],
    ['https://eng.example.com', 'wss://eng.example.com/threads', 'https://eng.example.com/graphql'],
    ['https://host/prefix', 'wss://host/prefix/threads', 'https://host/prefix/graphql'],
    ['https://host/a/b/', 'wss://host/a/b/threads', 'https://host/a/b/graphql'],
    ['http://127.0.0.1:9000/engine?x=1#frag', 'ws://127.0.0.1:9000/engine/threads', 'http://127.0.0.1:9000/engine/graphql'],
    ['ws://localhost:8081/threads', 'ws://localhost:8081/threads', 'http://localhost:8081/graphql'],
    ['wss://host/prefix/graphql', 'wss://host/prefix/threads', 'https://host/prefix/graphql'],
    ['HTTPS://Host.Example.com:443/p', 'wss://host.example.com/p/threads', 'https://host.example.com/p/graphql'],
    ['http://[::1]:8081', 'ws://[::1]:8081/threads', 'http://[::1]:8081/graphql'],
  ];
  for (const [input, ws, gql] of cases) {
    const e = deriveEndpoints(input);
    assert.equal(e.wsUrl, ws, input);
    assert.equal(e.graphqlUrl, gql, input);
  }
});

test('bad engineUrl values are refused with invalid_argument', async () => {
  for (const bad of [undefined, '', '   ', 'localhost:8081', 'not a url', 'ftp://host', 'http://user:pw@host']) {
    assert.throws(() => deriveEndpoints(bad), (err) => err instanceof ThreadengineError && err.code === 'invalid_argument', String(bad));
  }
  await assert.rejects(connect({ engineUrl: 'localhost:8081', apiKey: 'k' }), { code: 'invalid_argument' });
  await assert.rejects(connect({ engineUrl: 'http://localhost:8081' }), { code: 'invalid_argument', message: /apiKey/ });
  await assert.rejects(connect({ engineUrl: 'http://localhost:8081', apiKey: 'k', maxInFlight: 0 }), { code: 'invalid_argument', message: /maxInFlight/ });
  await assert.rejects(connect(), { code: 'invalid_argument' });
});
