import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { idempotencyKey } from '../src/index.js';

// Computed by the engine's Go implementation (the Go SDK's algorithm); the Go
// test in test/jssdk recomputes this file so it cannot drift.
const vectors = JSON.parse(await readFile(new URL('./fixtures/idempotency-keys.json', import.meta.url), 'utf8'));

// The Threadify Node SDK 0.1.x algorithm: UTF-16 code units, UTF-16 key order.
function legacyKey(stepName, context) {
  const input = stepName + JSON.stringify(context, Object.keys(context).sort());
  let h = 2166136261;
  for (let i = 0; i < input.length; i++) {
    h ^= input.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

test('automatic idempotency keys equal the Go SDK\'s for every vector', () => {
  assert.ok(vectors.length >= 10);
  for (const v of vectors) {
    assert.equal(idempotencyKey(v.stepName, v.context), v.key, v.name);
  }
});

test('the legacy Node hashing agreed only on ASCII without HTML characters', () => {
  const ascii = vectors.find((v) => v.name === 'ascii');
  assert.equal(legacyKey(ascii.stepName, ascii.context), ascii.key);
  for (const name of ['accented value', 'CJK key and value', 'emoji', 'non-ASCII step name', 'HTML characters']) {
    const v = vectors.find((x) => x.name === name);
    assert.notEqual(legacyKey(v.stepName, v.context), v.key, name);
  }
});

test('key does not depend on insertion order', () => {
  assert.equal(idempotencyKey('s', { b: '2', a: '1' }), idempotencyKey('s', { a: '1', b: '2' }));
  assert.notEqual(idempotencyKey('s', { a: '1' }), idempotencyKey('t', { a: '1' }));
});
