#!/usr/bin/env node
// An independent verifier of threadengine exports, written from
// docs/integrators/verification.md alone: Node.js 20+ standard library only
// (crypto for SHA-256 and Ed25519). It shares no code with the engine.
//
//   node verify.mjs EXPORT KEYFILE [SAVED_CHECKPOINT]
//
// EXPORT: a thread export (JSON) or an NDJSON stream of them. KEYFILE: the
// body of GET /v1/log/keys. Prints "ok thread …" or "FAIL thread …" lines and
// exits 1 when a check fails.

import { createHash, createPublicKey, verify as edVerify } from 'node:crypto';
import { readFileSync } from 'node:fs';

const sha256 = (...parts) => { const h = createHash('sha256'); for (const p of parts) h.update(p); return h.digest(); };

// --- RFC 8785 (section 1 of the spec): JSON.stringify with sorted keys.
function canonical(v) {
  if (v === null || typeof v !== 'object') {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new Error('non-finite number');
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  const keys = Object.keys(v).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
}

// Record time: UTC, truncated to microseconds, six fractional digits.
function recordTime(s) {
  if (s === null || s === undefined) return null;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(s);
  if (!m) throw new Error(`bad time ${s}`);
  const ms = Date.parse(m[1] + m[3]);
  if (Number.isNaN(ms)) throw new Error(`bad time ${s}`);
  const whole = new Date(ms).toISOString().slice(0, 19);
  const frac = ((m[2] || '') + '000000').slice(0, 6);
  return `${whole}.${frac}Z`;
}

const obj = (v) => (v === null || v === undefined ? {} : v);

function stepHash(threadId, a, subs) {
  const rec = {
    type: 'threadengine.step/v2', thread_id: threadId, step_id: a.id, seq: a.seq, step_name: a.step_name,
    idempotency_key: a.idempotency_key, status: a.status, attempt: a.attempt, actor: a.actor,
    actor_service: a.actor_service, context: obj(a.context), metadata: obj(a.metadata),
    started_at: recordTime(a.started_at), finished_at: recordTime(a.finished_at), recorded_at: recordTime(a.recorded_at),
    prev_hash: a.prev_hash,
    sub_steps: subs.map((s) => ({ id: s.id, name: s.name, status: s.status, payload: obj(s.payload), recorded_at: recordTime(s.recorded_at) })),
  };
  return 'sha256:' + sha256(Buffer.from(canonical(rec), 'utf8')).toString('hex');
}

// --- Merkle tree (section 4).
const leafHash = (data) => sha256(Buffer.from([0]), data);
const node = (l, r) => sha256(Buffer.from([1]), l, r);
function maxpow2(n) { let k = 1; while (k * 2 < n) k *= 2; return k; }

function runRecord(p, lo, hi, n, h) {
  if (hi - lo === 1) { if (p.length !== 0) throw new Error('proof too long'); return h; }
  if (p.length === 0) throw new Error('proof too short');
  const last = p[p.length - 1], rest = p.slice(0, -1), k = maxpow2(hi - lo);
  return n < lo + k ? node(runRecord(rest, lo, lo + k, n, h), last) : node(last, runRecord(rest, lo + k, hi, n, h));
}

function runTree(p, lo, hi, n, h) {
  if (n === hi) {
    if (lo === 0) { if (p.length !== 0) throw new Error('proof too long'); return [h, h]; }
    if (p.length !== 1) throw new Error('bad proof length');
    return [p[0], p[0]];
  }
  if (p.length === 0) throw new Error('proof too short');
  const last = p[p.length - 1], rest = p.slice(0, -1), k = maxpow2(hi - lo);
  if (n <= lo + k) { const [o, t] = runTree(rest, lo, lo + k, n, h); return [o, node(t, last)]; }
  const [o, t] = runTree(rest, lo + k, hi, n, h);
  return [node(last, o), node(last, t)];
}

const b64 = (s) => { const b = Buffer.from(s, 'base64'); if (b.length !== 32) throw new Error('hash is not 32 bytes'); return b; };

// --- Keys and signed checkpoints (section 5).
function parseKey(line) {
  // The base64 may itself contain '+': split at the first two only.
  const i = line.indexOf('+'), j = line.indexOf('+', i + 1);
  const name = line.slice(0, i), hash16 = line.slice(i + 1, j), key64 = i < 0 || j < 0 ? '' : line.slice(j + 1);
  const key = Buffer.from(key64 || '', 'base64');
  if (!name || !/^[0-9a-f]{8}$/.test(hash16 || '') || key.length !== 33 || key[0] !== 1) throw new Error(`bad key ${line}`);
  const want = sha256(Buffer.from(name + '\n', 'utf8'), key).subarray(0, 4).toString('hex');
  if (want !== hash16) throw new Error(`key hash mismatch in ${line}`);
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), key.subarray(1)]);
  return { name, hash: Buffer.from(hash16, 'hex'), pub: createPublicKey({ key: spki, format: 'der', type: 'spki' }) };
}

function openCheckpoint(text, keys) {
  const split = text.indexOf('\n\n');
  if (split < 0) throw new Error('checkpoint: no signature block');
  const body = text.slice(0, split + 1);
  const sigLines = text.slice(split + 2).split('\n').filter((l) => l !== '');
  let signedBy = null;
  for (const line of sigLines) {
    if (!line.startsWith('\u2014 ')) throw new Error('checkpoint: malformed signature line');
    const [name, sig64] = line.slice(2).split(' ');
    const sig = Buffer.from(sig64 || '', 'base64');
    for (const k of keys) {
      if (k.name === name && sig.length === 68 && sig.subarray(0, 4).equals(k.hash) &&
          edVerify(null, Buffer.from(body, 'utf8'), k.pub, sig.subarray(4))) signedBy = name;
    }
  }
  if (!signedBy) throw new Error('checkpoint: no valid signature by the given keys');
  const lines = body.split('\n');
  const origin = lines[0], size = Number(lines[1]), root = b64(lines[2]);
  if (!/^\d+$/.test(lines[1])) throw new Error('checkpoint: bad size');
  if (origin !== signedBy) throw new Error(`checkpoint of ${origin} signed by ${signedBy}`);
  return { origin, size, root };
}

// --- Verifying one export (section 7).
function verifyThread(x, keys, saved) {
  const fails = [];
  const fail = (m) => fails.push(m);
  const tid = x.thread.id;
  const subsOf = new Map();
  for (const s of x.sub_steps || []) { if (!subsOf.has(s.step_id)) subsOf.set(s.step_id, []); subsOf.get(s.step_id).push(s); }
  const records = new Map();
  for (const a of x.attempts) {
    const h = stepHash(tid, a, subsOf.get(a.id) || []);
    records.set(a.id, h);
    if (a.hash.startsWith('sha256:') && h !== a.hash) fail(`step seq ${a.seq} (${a.step_name}, ${a.id}): hash does not match its content`);
  }
  // Chain (section 2).
  const byPrev = new Map();
  for (const a of x.attempts) { if (byPrev.has(a.prev_hash)) fail(`chain forks at ${a.prev_hash || 'the start'}`); byPrev.set(a.prev_hash, a); }
  let cur = '', n = 0;
  while (byPrev.has(cur) && n <= x.attempts.length) { cur = byPrev.get(cur).hash; n++; }
  if (n !== x.attempts.length || n !== x.thread.step_count || cur !== x.thread.last_hash) {
    fail(`chain incomplete: the thread records ${x.thread.step_count} steps ending at ${x.thread.last_hash}; the chain reaches ${n} of ${x.attempts.length}, ending at ${cur}`);
  }
  if (!x.log) { fail('no log section'); return { tid, fails }; }
  let cp;
  try { cp = openCheckpoint(x.log.checkpoint, keys); } catch (e) { fail(e.message); return { tid, fails }; }
  const leaves = new Map();
  for (const l of x.log.leaves) {
    let leaf;
    try {
      leaf = JSON.parse(l.data);
      if (canonical(leaf) !== l.data) throw new Error('not canonical');
      const root = runRecord(l.proof.map(b64), 0, cp.size, l.index, leafHash(Buffer.from(l.data, 'utf8')));
      if (!root.equals(cp.root)) throw new Error(`not in checkpoint ${cp.size}`);
    } catch (e) { fail(`leaf ${l.index}: ${e.message}`); continue; }
    if (leaf.thread_id !== tid) { fail(`leaf ${l.index} names another thread`); continue; }
    if (leaf.type === 'thread_deleted') fail(`leaf ${l.index} is the thread's tombstone`);
    if (leaf.type === 'step') leaves.set(leaf.step_id, { ...leaf, index: l.index });
  }
  for (const a of x.attempts) {
    const leaf = leaves.get(a.id);
    if (!leaf) fail(`step seq ${a.seq} (${a.id}) is not in checkpoint ${cp.size}`);
    else if (leaf.hash !== a.hash || leaf.seq !== a.seq) fail(`step seq ${a.seq} (${a.id}) differs from leaf ${leaf.index}`);
    else if (!a.hash.startsWith('sha256:') && leaf.record_hash && leaf.record_hash !== records.get(a.id)) fail(`step seq ${a.seq} (${a.id}) changed since logged`);
  }
  const ids = new Set(x.attempts.map((a) => a.id));
  for (const [id, leaf] of leaves) if (!ids.has(id)) fail(`missing step seq ${leaf.seq} (${id}, log index ${leaf.index})`);
  if (saved) {
    if (saved.origin !== cp.origin) fail('saved checkpoint is of another log');
    else if (saved.size === 0) { /* every tree extends the empty one */ }
    else if (saved.size === cp.size) { if (!saved.root.equals(cp.root)) fail('log rewritten: same size, different root'); }
    else if (saved.size > cp.size) fail('export older than the saved checkpoint');
    else {
      const c = x.log.consistency;
      if (!c || c.old !== saved.size || c.new !== cp.size) fail(`no consistency proof from ${saved.size}`);
      else {
        try {
          const [o, t] = runTree(c.proof.map(b64), 0, cp.size, saved.size, saved.root);
          if (!o.equals(saved.root) || !t.equals(cp.root)) throw new Error('roots differ');
        } catch (e) { fail(`log rewritten since the saved checkpoint: ${e.message}`); }
      }
    }
  }
  return { tid, fails, steps: x.attempts.length, cp };
}

function main() {
  const [exportPath, keyPath, savedPath] = process.argv.slice(2);
  if (!exportPath || !keyPath) { console.error('usage: node verify.mjs EXPORT KEYFILE [SAVED_CHECKPOINT]'); process.exit(2); }
  const keys = readFileSync(keyPath, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean).map(parseKey);
  const saved = savedPath ? openCheckpoint(readFileSync(savedPath, 'utf8'), keys) : null;
  const text = readFileSync(exportPath, 'utf8');
  let docs;
  try { docs = [JSON.parse(text)]; } catch { docs = text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l)); }
  let ok = true;
  for (const x of docs) {
    if (x.error) { console.log(`FAIL stream error ${x.error.code}`); ok = false; continue; }
    const r = verifyThread(x, keys, saved);
    if (r.fails.length) { ok = false; console.log(`FAIL thread ${r.tid}:`); for (const f of r.fails) console.log(`     - ${f}`); }
    else console.log(`ok   thread ${r.tid}: ${r.steps} steps in checkpoint ${r.cp.origin} #${r.cp.size}`);
  }
  console.log(ok ? `verified ${docs.length} threads` : 'verification FAILED');
  process.exit(ok ? 0 : 1);
}

main();
