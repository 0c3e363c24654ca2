import net from 'node:net';

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

export const ORDER_FLOW = `
contract_name: order_flow
version: 1
entry_points: [validate]
parties: [checkout, warehouse]
steps:
  - id: validate
    owner: checkout
    business_context:
      required: [items]
  - id: pay
    owner: checkout
  - id: ship
    owner: warehouse
transitions:
  - from: validate
    to: pay
  - from: pay
    to: ship
    max_retries: 1
terminal_steps: [ship]
`;
