// The Threadify Node SDK's documented reads at their documented sizes, with
// the UNMODIFIED SDK against a running engine (issue 29): steps() on a
// thread of 100 distinct steps, getThreadsByRef({limit: 100}) with 100
// matching threads, history({limit: 1000}) on a step of 1,000 attempts, and
// a 30-day invitation (expiresIn: "30d", index.d.ts's example) created and
// joined by a second user, and subSteps() of a step state without an
// idempotency key on that 100-step thread.
//
// Env: THREADENGINE_NODE_SDK_DIR, ENGINE_WS_URL, ENGINE_API_KEY,
// ENGINE_API_KEY_2. Prints one JSON line of results; {"error": "..."} and
// exit 1 on failure. test/sdk/reads_test.go asserts the results.

import { pathToFileURL } from 'node:url';

const sdkDir = process.env.THREADENGINE_NODE_SDK_DIR;
const wsUrl = process.env.ENGINE_WS_URL;
const apiKey = process.env.ENGINE_API_KEY;
const apiKey2 = process.env.ENGINE_API_KEY_2;

async function main() {
  const { Threadify } = await import(pathToFileURL(sdkDir + '/src/index.js').href);
  const out = {};
  const conn = await Threadify.connect(apiKey, 'checkout-service', { url: wsUrl });

  // steps() on a thread of 100 distinct steps (the last one with a
  // sub-step, read back with subSteps()).
  const wide = await conn.start('Wide');
  for (let i = 0; i < 99; i++) {
    await wide.step('s' + String(i).padStart(3, '0')).success();
  }
  await wide.step('s099').subStep('inner', { i: 99 }).success();
  const wideSteps = await (await conn.getThread(wide.threadId)).steps();
  out.steps = { count: wideSteps.length, first: wideSteps[0] && wideSteps[0].stepName,
    last: wideSteps.length ? wideSteps[wideSteps.length - 1].stepName : null };
  const last = wideSteps.find((s) => s.stepName === 's099');
  const subs = last ? await last.subSteps() : [];
  out.subSteps = subs.map((s) => s.name);
  // subSteps() of a step state without an idempotency key (this engine keys
  // every step it records, computing a key when none is sent, so such a
  // state comes from data recorded elsewhere): the SDK's own ArchivedStep,
  // built as DataRetriever builds it from a row whose key is empty, sends
  // idempotencyKey: null and so selects the steps of that name.
  const { ArchivedStep, GraphQLClient } = await import(pathToFileURL(sdkDir + '/src/DataRetriever.js').href);
  const keyless = new ArchivedStep({ threadId: wide.threadId, stepName: 's099', idempotencyKey: '' },
    new GraphQLClient(conn.graphqlUrl, apiKey));
  out.subStepsWithoutKey = (await keyless.subSteps()).map((s) => s.name);

  // getThreadsByRef({limit: 100}) with 100 matching threads.
  const ref = 'bulk-' + wide.threadId;
  for (let i = 0; i < 100; i++) {
    await conn.start('Bulk-' + i, { refs: { batch: ref } });
  }
  const byRef = await conn.getThreadsByRef({ refKey: 'batch', refValue: ref, limit: 100 });
  out.threadsByRef = { count: byRef.length, distinct: new Set(byRef.map((x) => x.id)).size };
  // A read the cost limit refuses (an offset of 200,000 rows costs 2,000
  // points): the SDK throws "GraphQL request failed: <status> <statusText>"
  // without reading the body, so the engine's message is the reason phrase.
  out.refusal = await conn.getThreadsByRef({ refKey: 'batch', refValue: ref, offset: 200000 })
    .then(() => 'accepted', (e) => e.message);

  // history({limit: 1000}) on a step of 1,000 attempts: 999 failures, then
  // the success, all with the same context (so the same auto key).
  const retried = await conn.start('Retried');
  for (let i = 0; i < 999; i++) {
    await retried.step('charge').addContext({ amount: 7 }).failed({ error: 'declined ' + (i + 1) });
  }
  await retried.step('charge').addContext({ amount: 7 }).success();
  const charge = (await (await conn.getThread(retried.threadId)).steps('charge'))[0];
  const history = await charge.history({ limit: 1000 });
  out.history = { count: history.length, newest: history[0] && history[0].attempt, newestStatus: history[0] && history[0].status,
    oldest: history.length ? history[history.length - 1].attempt : null, retryCount: charge.retryCount };

  // A 30-day invitation, created and joined. Node's inviteParty sends no
  // threadId: the engine invites to the connection's only thread, so the
  // inviter is a connection of its own.
  const inviter = await Threadify.connect(apiKey, 'merchant-service', { url: wsUrl });
  const it = await inviter.start('Invited');
  const inv = await it.inviteParty({ role: 'supplier', accessLevel: Threadify.FOR_PARTICIPANT, expiresIn: '30d' });
  const guest = await Threadify.connect(apiKey2, 'supplier-service', { url: wsUrl });
  const joined = await guest.join(inv.token);
  await joined.step('deliver').success();
  out.invite = { expiresAt: inv.expiresAt, joinedThread: joined.threadId === it.threadId, accessLevel: joined.accessLevel,
    guestSteps: (await (await guest.getThread(it.threadId)).steps('deliver')).length };
  await guest.close();
  await inviter.close();
  await conn.close();
  console.log(JSON.stringify(out));
}

main().then(() => process.exit(0), (e) => {
  console.log(JSON.stringify({ error: String(e && e.stack || e) }));
  process.exit(1);
});
