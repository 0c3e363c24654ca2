// Gherkin contracts judged at run time, driven by the UNMODIFIED Threadify
// Node SDK (0.1.24) against a running engine (test/sdk/gherkin_test.go).
//
// Env: THREADENGINE_NODE_SDK_DIR, ENGINE_WS_URL (ws://host:port/threads),
// ENGINE_WS_URL_B (a second replica; the first one when unset),
// ENGINE_API_KEY. Contracts payment_processing, shipping_confirmation and
// fresh_pay are uploaded by the Go side.
//
// Prints one JSON line of results and exits 0; on failure {"error": "..."}
// and exit 1.

import { pathToFileURL } from 'node:url';

const sdkDir = process.env.THREADENGINE_NODE_SDK_DIR;
const wsUrl = process.env.ENGINE_WS_URL;
const wsUrlB = process.env.ENGINE_WS_URL_B || wsUrl;
const apiKey = process.env.ENGINE_API_KEY;

function check(cond, msg, got) {
  if (!cond) {
    throw new Error(msg + (got === undefined ? '' : ': got ' + JSON.stringify(got)));
  }
}

// refused runs a step expected to be refused and returns the SDK's error message.
async function refused(promise) {
  try {
    const r = await promise;
    return { accepted: r };
  } catch (e) {
    return { message: e.message, isDuplicate: e.isDuplicate };
  }
}

// waitFor sends the waitFor frame the 0.1.24 SDK has no method for on the
// SDK's own socket and resolves with the engine's answer.
function waitFor(conn, threadId, stepName, invocationId, requestId) {
  return new Promise((resolve) => {
    const onMessage = (d) => {
      const m = JSON.parse(d.toString());
      if (m.action === 'waitFor' && m.requestId === requestId) {
        conn.ws.off('message', onMessage);
        resolve(m);
      }
    };
    conn.ws.on('message', onMessage);
    conn.ws.send(JSON.stringify({ action: 'waitFor', requestId, threadId, stepName, invocationId, await: true, timeoutMs: 20000 }));
  });
}

async function main() {
  check(sdkDir && wsUrl && apiKey, 'THREADENGINE_NODE_SDK_DIR, ENGINE_WS_URL and ENGINE_API_KEY are required');
  const { Threadify } = await import(pathToFileURL(sdkDir + '/src/index.js').href);
  const out = {};

  // 1. Payment: the reviewer approves, the payment processor charges.
  const reviewer = await Threadify.connect(apiKey, 'reviewer-service', { url: wsUrl });
  const payer = await Threadify.connect(apiKey, 'payment_processor-service', { url: wsUrl });
  const t = await reviewer.start('Pay-1', 'payment_processing');
  out.paymentThread = t.threadId;
  await t.step('approval').addContext({ reference: 'PAY-1' }).success('approved');
  const pt = await payer.join(t.threadId, 'payment_processor');
  out.zero = await refused(pt.step('charge').addContext({ amount: 0, currency: 'GBP', reference: 'PAY-1' }).success());
  out.jpy = await refused(pt.step('charge').addContext({ amount: 12.5, currency: 'JPY', reference: 'PAY-1' }).success());
  const ok = await pt.step('charge').addContext({ amount: 12.5, currency: 'GBP', reference: 'PAY-1' }).success();
  out.charged = ok.status;

  // 2. Cross-step equality: delivery carries the latest shipment's number.
  const carrier = await Threadify.connect(apiKey, 'carrier-service', { url: wsUrl });
  const s = await carrier.start('Ship-1', 'shipping_confirmation');
  out.shippingThread = s.threadId;
  await s.step('order_shipped').addContext({ tracking_number: 'TRK-1' }).success();
  await s.step('order_shipped').addContext({ tracking_number: 'TRK-2' }).success();
  out.oldTracking = await refused(s.step('delivery_confirmed').addContext({ tracking_number: 'TRK-1' }).success());
  out.delivered = (await s.step('delivery_confirmed').addContext({ tracking_number: 'TRK-2' }).success()).status;

  // 3. Fresh approvals: two charges need two approvals. Two connections,
  // one per replica, wait for the same charge concurrently; one approval
  // allows exactly one of them.
  const opsA = await Threadify.connect(apiKey, 'ops-service', { url: wsUrl });
  const opsB = await Threadify.connect(apiKey, 'ops-service', { url: wsUrlB });
  const f = await opsA.start('Fresh-1', 'fresh_pay');
  out.freshThread = f.threadId;
  const fb = await opsB.join(f.threadId, 'ops');
  const waits = [waitFor(opsA, f.threadId, 'charge', 'inv-a', 'wa'), waitFor(opsB, f.threadId, 'charge', 'inv-b', 'wb')];
  await f.step('approval').idempotencyKey('ap-1').success();
  const first = await Promise.race(waits.map((p, i) => p.then((m) => ({ i, m }))));
  out.firstDecision = first.m.decision;
  const onA = first.i === 0;
  let otherSettled = false;
  waits[onA ? 1 : 0].then(() => { otherSettled = true; });
  // The granted side records its charge under its invocation (the event
  // object is the SDK's; 0.1.24 has no option for it).
  const grantedThread = onA ? f : fb;
  const c1 = grantedThread.step('charge').addContext({ amount: 5 });
  c1.event.invocationId = onA ? 'inv-a' : 'inv-b';
  out.firstCharge = (await c1.success()).status;
  // The other is still waiting: it is allowed after the second approval.
  out.secondSettledEarly = otherSettled;
  await f.step('approval').idempotencyKey('ap-2').success();
  const second = await waits[onA ? 1 : 0];
  out.secondDecision = second.decision;
  const c2 = (onA ? fb : f).step('charge').addContext({ amount: 6 });
  c2.event.invocationId = onA ? 'inv-b' : 'inv-a';
  out.secondCharge = (await c2.success()).status;

  for (const c of [reviewer, payer, carrier, opsA, opsB]) {
    c.close();
  }
  console.log(JSON.stringify(out));
}

main().then(() => process.exit(0), (e) => {
  console.log(JSON.stringify({ error: String(e && e.stack || e) }));
  process.exit(1);
});
