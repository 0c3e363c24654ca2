// Starts a real threadengine (built from this repository) on loopback with a
// fresh database, and bootstraps an administrator whose API key the tests
// use. The database is SQLite in a temporary directory, unless test/jssdk
// (the Go test) runs the suite on PostgreSQL: it then creates one fresh
// schema per test file and passes their URLs in THREADENGINE_SDK_DATABASES
// ({ "<file>.test.js": "postgres://…?search_path=…" }).
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, dirname, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createInterface } from 'node:readline';
import { before, after } from 'node:test';
import { connect } from '../../src/index.js';

const run = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');

let built = null;

/** The engine binary: THREADENGINE_BIN (set by the Go test), else built once per process with go build. */
async function engineBinary() {
  if (process.env.THREADENGINE_BIN) return process.env.THREADENGINE_BIN;
  built ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'threadengine-bin-'));
    const bin = join(dir, 'threadengine');
    await run('go', ['build', '-o', bin, './cmd/threadengine'], { cwd: repoRoot, maxBuffer: 1 << 24 });
    return bin;
  })();
  return built;
}

let databaseTaken = false;

/**
 * The database of this test file's engine: its PostgreSQL schema when the
 * Go test gave one (each file's once: a second engine in one file would
 * share it), else a new SQLite file in dir.
 */
function databaseURL(dir) {
  const raw = process.env.THREADENGINE_SDK_DATABASES;
  if (!raw) return `sqlite://${join(dir, 'threadengine.db')}`;
  const file = basename(process.argv[1] ?? '');
  const url = JSON.parse(raw)[file];
  if (!url) throw new Error(`THREADENGINE_SDK_DATABASES names no database for ${file}`);
  if (databaseTaken) throw new Error(`${file} starts a second engine; its database is taken`);
  databaseTaken = true;
  return url;
}

/** Which dialect the engines of this run use: "postgres" or "sqlite". */
export const dialect = process.env.THREADENGINE_SDK_DATABASES ? 'postgres' : 'sqlite';

/**
 * @param {{ env?: Record<string, string> }} [options] extra engine configuration (THREADENGINE_… variables)
 * @returns {Promise<{ url: string, apiKey: string, dir: string, admin(path: string, init?: RequestInit): Promise<any>, stop(): Promise<void> }>}
 */
export async function startEngine(options = {}) {
  const bin = await engineBinary();
  const dir = await mkdtemp(join(tmpdir(), 'threadengine-sdk-'));
  const env = {
    ...process.env,
    THREADENGINE_DATABASE__URL: databaseURL(dir),
    THREADENGINE_SERVER__LISTEN: '127.0.0.1:0',
    THREADENGINE_SECURITY__HASH_CHAIN_SECRET: 'sdk-tests-hash-chain-secret-0123456789abcdef',
    THREADENGINE_LOG__FORMAT: 'json',
    THREADENGINE_LOG__LEVEL: 'info',
    ...(options.env ?? {}),
  };
  const boot = await run(bin, ['bootstrap-owner', '--email', 'owner@example.com', '--name', 'Owner'], { cwd: dir, env });
  const apiKey = boot.stdout.trim().split('\n').pop();

  const proc = spawn(bin, ['serve'], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const logs = [];
  const addr = await new Promise((resolveAddr, reject) => {
    const lines = createInterface({ input: proc.stderr });
    lines.on('line', (line) => {
      logs.push(line);
      if (logs.length > 200) logs.shift();
      try {
        const rec = JSON.parse(line);
        if (rec.msg === 'threadengine listening') resolveAddr(rec.addr);
      } catch { /* not JSON */ }
    });
    proc.once('exit', (code) => reject(new Error(`engine exited with ${code} before listening:\n${logs.join('\n')}`)));
  });
  const url = `http://${addr}`;
  const stop = async () => {
    if (proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  /** Calls the engine's REST API as the administrator. */
  const admin = async (path, init = {}) => {
    const res = await fetch(url + path, {
      ...init,
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) },
    });
    const body = res.status === 204 ? null : await res.json();
    if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: HTTP ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  return { url, apiKey, dir, admin, stop, logs };
}

/**
 * Creates a member service account and returns its API key: a principal of
 * its own. The engine keeps a principal's undelivered notifications and hands
 * them to its next connection, so a test that must know every frame its
 * connection sends (or receives) dials with a key no other test uses.
 */
export async function serviceAccountKey(engine, name) {
  const created = await engine.admin('/v1/api-keys', {
    method: 'POST', body: JSON.stringify({ name, create_service_account: { name: `${name}-bot`, role: 'member' } }),
  });
  return created.key;
}

/** Uploads a contract (YAML) as the administrator. */
export async function applyContract(engine, yaml) {
  const res = await fetch(`${engine.url}/v1/contracts`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${engine.apiKey}`, 'Content-Type': 'application/yaml' },
    body: yaml,
  });
  if (!res.ok) throw new Error(`contract upload: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * The engine of a test file: started before its tests (with extra
 * configuration and contracts), stopped after them with every connection
 * dial() opened. dial(name) connects as a new member service account — a
 * principal of its own, whose notifications and grants no other test's
 * connection can take — unless options.apiKey names one.
 */
export function useEngine({ env, contracts = [] } = {}) {
  const ctx = { engine: null, open: [] };
  before(async () => {
    ctx.engine = await startEngine({ env });
    for (const c of contracts) await applyContract(ctx.engine, c);
  });
  after(async () => {
    await Promise.all(ctx.open.map((c) => c.close()));
    await ctx.engine?.stop();
  });
  let dialed = 0;
  ctx.dial = async (name, options = {}) => {
    const apiKey = options.apiKey ?? await serviceAccountKey(ctx.engine, `${name}-${++dialed}`);
    const c = await connect({ engineUrl: ctx.engine.url, apiKey, serviceName: 'checkout-service', ...options });
    ctx.open.push(c);
    return c;
  };
  return ctx;
}
