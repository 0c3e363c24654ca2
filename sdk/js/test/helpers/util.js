import net from 'node:net';
import { readFileSync } from 'node:fs';

/** Polls fn until it returns a truthy value (returned) or timeoutMs passes (throws). */
export async function waitFor(fn, what, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Resolves with the next occurrence of a connection event. */
export function nextEvent(conn, event, timeoutMs = 15_000) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { off(); reject(new Error(`no ${event} event within ${timeoutMs} ms`)); }, timeoutMs);
    const off = conn.on(event, (arg) => { clearTimeout(t); off(); resolve(arg); });
  });
}

/** A loopback port nothing listens on. */
export async function closedPort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// The order_flow contract the Go end-to-end tests use too.
export const ORDER_FLOW = readFileSync(new URL('../../../../test/enginetest/order_flow.yaml', import.meta.url), 'utf8');
