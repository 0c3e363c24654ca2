// The OpenTelemetry span exporter, driven by the real OpenTelemetry SDK
// (@opentelemetry/sdk-trace-base, a dev dependency only), exporting to a real
// engine's POST /v1/traces; what it stored is read back over GraphQL.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { ThreadengineSpanExporter, ExportResultCode } from '../src/index.js';
import { useEngine } from './helpers/engine.js';

// The OpenTelemetry SDK is a dev dependency: without `npm ci` these tests
// are skipped, with the reason.
let skip = false;
let trace, ROOT_CONTEXT, SpanStatusCode, BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, resourceFromAttributes;
try {
  ({ trace, ROOT_CONTEXT, SpanStatusCode } = await import('@opentelemetry/api'));
  ({ BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor } = await import('@opentelemetry/sdk-trace-base'));
  ({ resourceFromAttributes } = await import('@opentelemetry/resources'));
} catch (err) {
  skip = `the OpenTelemetry SDK is not installed (npm ci in sdk/js): ${err.message}`;
}

const ctx = useEngine();
const dial = () => ctx.dial('tracer');
const providers = [];

after(async () => {
  await Promise.all(providers.map((p) => p.shutdown()));
});

function provider(processor) {
  const p = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'checkout' }), spanProcessors: [processor] });
  providers.push(p);
  return p;
}

/** Spans of one checkout: a root, validate (with an event and a mapped ref), a failed pay, and two spans the filters drop. */
function checkoutTrace(tracer, rootName = 'checkout') {
  const root = tracer.startSpan(rootName, { attributes: { 'threadify.label': 'Order OT-1' } });
  const ctx = trace.setSpan(ROOT_CONTEXT, root);
  const validate = tracer.startSpan('validate', { attributes: { items: 3, 'order.id': 'OT-1', express: true, weight: 1.5 } }, ctx);
  validate.addEvent('stock checked', { sku: 'A-1' });
  validate.end();
  const pay = tracer.startSpan('pay', { attributes: { 'threadify.context.amount': '42' } }, ctx);
  pay.setStatus({ code: SpanStatusCode.ERROR, message: 'card declined' });
  pay.end();
  tracer.startSpan('llm.call', {}, ctx).end();
  tracer.startSpan('noise', {}, ctx).end();
  root.end();
  return root.spanContext().traceId;
}

test('spans exported through the OpenTelemetry SDK become a thread, read back over GraphQL', { skip }, async () => {
  const conn = await dial();
  const exporter = conn.createSpanExporter({ refs: { 'order.id': 'orderId' }, filters: ['llm.*', 'noise'], tags: ['otel'] });
  assert.ok(exporter instanceof ThreadengineSpanExporter);
  assert.equal(exporter.url, `${ctx.engine.url}/v1/traces`);
  const p = provider(new BatchSpanProcessor(exporter));
  const traceId = checkoutTrace(p.getTracer('sdk-test', '1.0.0'));
  await p.forceFlush();

  const found = await conn.threadsByRef({ refKey: 'otel_trace_id', refValue: traceId });
  assert.equal(found.totalCount, 1);
  const view = found.threads[0];
  assert.equal(view.refs.label, 'Order OT-1');
  assert.equal(view.refs.orderId, 'OT-1', 'a mapped attribute becomes a thread ref');
  assert.equal(view.status, 'active', 'the engine does not end a thread when its root span ends');
  const steps = await view.steps();
  assert.deepEqual(steps.map((s) => s.stepName).sort(), ['checkout', 'pay', 'validate'], 'filtered spans are not sent');
  const [validate] = await view.steps('validate');
  assert.deepEqual(validate.latestContext, { items: '3', express: 'true', weight: '1.5' }, 'attributes are the context, the mapped one is not');
  assert.equal(validate.actorService, 'checkout-service');
  const subs = await validate.subSteps();
  assert.deepEqual(subs.map((s) => [s.name, s.payload]), [['stock checked', { sku: 'A-1' }]]);
  const [pay] = await view.history('pay');
  assert.equal(pay.status, 'failed');
  assert.equal(pay.error, 'card declined');
  assert.equal(pay.context.amount, '42');
  const tagged = await conn.query('query($id: ID!) { thread(id: $id) { tags } }', { id: view.id });
  assert.deepEqual(tagged.data.thread.tags, ['otel']);
});

test('a keyed trace lands on the thread of its key; endThreadOnRootSpan completes or cancels it', { skip }, async () => {
  const conn = await dial();
  const key = `otel-order-${Date.now()}`;
  const t = await conn.thread(key, { label: 'keyed trace' });
  const exporter = conn.createSpanExporter({ threadKey: (span) => (span.name === 'fulfil' || span.name === 'pick' ? key : undefined), endThreadOnRootSpan: true });
  const p = provider(new SimpleSpanProcessor(exporter));
  const tracer = p.getTracer('sdk-test');
  const root = tracer.startSpan('fulfil');
  tracer.startSpan('pick', {}, trace.setSpan(ROOT_CONTEXT, root)).end();
  root.end();
  await p.forceFlush();
  const view = await conn.getThread(t.threadId);
  assert.deepEqual((await view.steps()).map((s) => s.stepName).sort(), ['fulfil', 'pick']);
  assert.equal(view.status, 'completed', 'the root span ended OK: the thread is completed');
  const byTrace = await conn.threadsByRef({ refKey: 'otel_trace_id', refValue: root.spanContext().traceId });
  assert.ok(byTrace.threads.every((x) => x.id === t.threadId), 'the keyed trace started no thread of its own');

  // A failed root span cancels its (unkeyed) trace's thread.
  const failing = tracer.startSpan('doomed');
  failing.setStatus({ code: SpanStatusCode.ERROR, message: 'gave up' });
  failing.end();
  await p.forceFlush();
  const doomed = await conn.threadsByRef({ refKey: 'otel_trace_id', refValue: failing.spanContext().traceId });
  assert.equal(doomed.threads[0].status, 'cancelled');
});

test('export results: success, refused key, retried 503, re-export deduplicated, rejected spans, shutdown', { skip }, async () => {
  const conn = await dial();
  const memory = new InMemorySpanExporter();
  const p = provider(new SimpleSpanProcessor(memory));
  const traceId = checkoutTrace(p.getTracer('sdk-test'), 'retried');
  const spans = memory.getFinishedSpans();
  assert.equal(spans.length, 5);
  const run = (exporter, list = spans) => new Promise((resolve) => exporter.export(list, resolve));

  const refused = await run(new ThreadengineSpanExporter({ engineUrl: ctx.engine.url, apiKey: 'td_not_a_key' }));
  assert.equal(refused.code, ExportResultCode.FAILED);
  assert.equal(refused.error.code, 'invalid_api_key');

  // An engine that answers 503 once, then is reached.
  let hits = 0;
  const flaky = http.createServer((req, res) => {
    if (++hits === 1) {
      res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '0' }).end('{"code":14,"message":"unavailable: try again"}');
      return;
    }
    const up = http.request(`${ctx.engine.url}${req.url}`, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise((r) => flaky.listen(0, '127.0.0.1', r));
  try {
    const viaFlaky = new ThreadengineSpanExporter({ engineUrl: `http://127.0.0.1:${flaky.address().port}`, apiKey: conn._apiKey, filters: ['llm.*', 'noise'] });
    const ok = await run(viaFlaky);
    assert.deepEqual(ok, { code: ExportResultCode.SUCCESS });
    assert.equal(hits, 2, 'one 503, one retry');
  } finally {
    flaky.closeAllConnections?.();
    await new Promise((r) => flaky.close(r));
  }
  const exporter = conn.createSpanExporter({ filters: ['llm.*', 'noise'] });
  assert.deepEqual(await run(exporter), { code: ExportResultCode.SUCCESS }, 'the same spans again');
  const [view] = (await conn.threadsByRef({ refKey: 'otel_trace_id', refValue: traceId })).threads;
  const history = await view.history('validate');
  assert.equal(history.length, 1, 'a re-exported span is not recorded twice');

  // Spans of an ended thread are refused by the engine: partial success.
  await conn.threadById(view.id).cancel('closed');
  const late = memory.getFinishedSpans().filter((s) => s.name === 'pay');
  const rejected = await run(conn.createSpanExporter(), late.map((s) => ({ ...s, spanContext: () => ({ ...s.spanContext(), spanId: 'aaaaaaaaaaaaaaaa' }), attributes: { ...s.attributes, 'threadify.thread_id': view.id } })));
  assert.equal(rejected.code, ExportResultCode.FAILED);
  assert.equal(rejected.error.code, 'spans_rejected');
  assert.equal(rejected.error.rejectedSpans, 1);

  await exporter.shutdown();
  const after = await run(exporter);
  assert.equal(after.code, ExportResultCode.FAILED);
  assert.equal(after.error.code, 'connection_closed');
});

test('exports run one at a time, in the order they were asked for', { skip }, async () => {
  const conn = await dial();
  const memory = new InMemorySpanExporter();
  const p = provider(new SimpleSpanProcessor(memory));
  checkoutTrace(p.getTracer('sdk-test'), 'ordered');
  const [first, ...rest] = memory.getFinishedSpans();
  let release;
  const held = new Promise((r) => { release = r; });
  const calls = [];
  const exporter = conn.createSpanExporter({
    fetch: async (url, init) => {
      if (calls.push('start') === 1) await held; // the first request waits until released
      const res = await fetch(url, init);
      calls.push('end');
      return res;
    },
  });
  const results = [first, rest].map((list) => new Promise((resolve) => exporter.export(Array.isArray(list) ? list : [list], resolve)));
  await new Promise((r) => setImmediate(r)); // every pending callback has run
  assert.deepEqual(calls, ['start'], 'the second export waits for the first');
  release();
  assert.deepEqual((await Promise.all(results)).map((r) => r.code), [ExportResultCode.SUCCESS, ExportResultCode.SUCCESS]);
  assert.deepEqual(calls, ['start', 'end', 'start', 'end']);
});

test('the exporter checks its options', () => {
  assert.throws(() => new ThreadengineSpanExporter(), { code: 'invalid_argument' });
  assert.throws(() => new ThreadengineSpanExporter({ engineUrl: 'http://127.0.0.1:1' }), { code: 'invalid_argument', message: /apiKey/ });
  assert.throws(() => new ThreadengineSpanExporter({ engineUrl: 'http://127.0.0.1:1', apiKey: 'k', refs: 'x' }), { code: 'invalid_argument' });
  assert.throws(() => new ThreadengineSpanExporter({ engineUrl: 'http://127.0.0.1:1', apiKey: 'k', endThreadOnRootSpan: true }),
    { code: 'invalid_argument', message: /needs a connection/ });
});
