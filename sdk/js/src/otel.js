import { ThreadengineError, ErrorCode, invalidArgument } from './errors.js';
import { deriveEndpoints } from './endpoints.js';

/** The values of @opentelemetry/core's ExportResultCode. */
export const ExportResultCode = Object.freeze({ SUCCESS: 0, FAILED: 1 });

/** Attributes that steer the engine (threadify.*), never step context. */
const DIRECTIVES = new Set(['threadify.thread_id', 'threadify.thread_key', 'threadify.contract', 'threadify.label',
  'threadify.step_name', 'threadify.role', 'threadify.service', 'threadify.tags']);
const RETRYABLE = new Set([429, 502, 503, 504]);

/**
 * An OpenTelemetry SpanExporter (the interface of
 * @opentelemetry/sdk-trace-base, which this package does not need at run
 * time) that sends spans to the engine's OTLP/HTTP endpoint, POST
 * /v1/traces, as JSON: each trace becomes a thread (found by
 * threadify.thread_id, threadify.thread_key or the trace id), each span a
 * step (its id the step's idempotency key, so a re-exported batch is not
 * recorded twice), span events sub-steps, status ERROR a failed step.
 *
 * new ThreadengineSpanExporter(connection, options) takes the engine's
 * address and key from a connection; new ThreadengineSpanExporter({
 * engineUrl, apiKey, … }) needs no connection.
 */
export class ThreadengineSpanExporter {
  #o;
  #url;
  #conn;
  /** The exports in progress, one after another (see export). */
  #queue = Promise.resolve();
  #shutdown = false;

  constructor(connOrOptions, options = {}) {
    let conn = null;
    let o = options;
    if (connOrOptions && typeof connOrOptions === 'object' && typeof connOrOptions._request === 'function') {
      conn = connOrOptions;
    } else if (connOrOptions && typeof connOrOptions === 'object') {
      o = connOrOptions;
      conn = o.connection ?? null;
    } else {
      throw invalidArgument('ThreadengineSpanExporter needs a connection or { engineUrl, apiKey }');
    }
    const engineUrl = conn?.engineUrl ?? o.engineUrl;
    const apiKey = conn?._apiKey ?? o.apiKey;
    if (typeof apiKey !== 'string' || apiKey === '') throw invalidArgument('ThreadengineSpanExporter needs an apiKey');
    this.#url = `${deriveEndpoints(engineUrl).engineUrl}/v1/traces`;
    this.#conn = conn;
    const refs = o.refs ?? [];
    let refsMap;
    if (Array.isArray(refs)) {
      refsMap = Object.fromEntries(refs.map((k) => [k, k]));
    } else if (refs && typeof refs === 'object') {
      refsMap = { ...refs };
    } else {
      throw invalidArgument('refs must be an array of attribute names or an { attribute: refKey } object');
    }
    const filters = o.filters ?? [];
    if (!Array.isArray(filters) || filters.some((f) => typeof f !== 'string')) throw invalidArgument('filters must be an array of span names or prefix* patterns');
    for (const f of ['tags', 'threadKey']) {
      if (o[f] !== undefined && typeof o[f] !== 'function' && typeof o[f] !== 'string' && !Array.isArray(o[f])) {
        throw invalidArgument(`${f} must be a value or a function of the span`);
      }
    }
    if (o.endThreadOnRootSpan && !conn) throw invalidArgument('endThreadOnRootSpan needs a connection: new ThreadengineSpanExporter(connection, options)');
    const fetchImpl = o.fetch ?? conn?._fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') throw invalidArgument('no fetch implementation: use Node.js 18 or later, or pass { fetch }');
    this.#o = {
      apiKey,
      refsMap,
      filters,
      tags: o.tags,
      threadKey: o.threadKey,
      serviceName: o.serviceName ?? conn?.serviceName ?? null,
      endThreadOnRootSpan: o.endThreadOnRootSpan === true,
      timeoutMs: o.timeoutMs ?? 10_000,
      maxRetries: o.maxRetries ?? 3,
      fetch: (input, init) => fetchImpl(input, init),
    };
  }

  /** The OTLP endpoint spans go to. */
  get url() { return this.#url; }

  /**
   * SpanExporter.export: sends the spans (except filtered ones) and calls
   * back { code: ExportResultCode.SUCCESS } once the engine stored them, or
   * FAILED with a ThreadengineError: the engine refused the request, some
   * spans (code spans_rejected, rejectedSpans), or could not be reached
   * after maxRetries retries of 429/502/503/504 and network errors.
   */
  export(spans, resultCallback) {
    if (this.#shutdown) {
      resultCallback({ code: ExportResultCode.FAILED, error: new ThreadengineError(ErrorCode.CONNECTION_CLOSED, 'the exporter was shut down') });
      return;
    }
    // One export at a time, in the order they were asked for: a
    // SimpleSpanProcessor exports each span as it ends, and a child's steps
    // must reach the thread before its root span ends the thread
    // (endThreadOnRootSpan), so the thread's steps keep the spans' order.
    const p = this.#queue.then(() => this.#export(spans)).then(
      () => ({ code: ExportResultCode.SUCCESS }),
      (error) => ({ code: ExportResultCode.FAILED, error }));
    this.#queue = p;
    p.then(resultCallback);
  }

  /** Resolves once every export asked for so far has finished. */
  async forceFlush() {
    await this.#queue;
  }

  /** Finishes the exports in progress and refuses later ones. */
  async shutdown() {
    this.#shutdown = true;
    await this.forceFlush();
  }

  async #export(spans) {
    const kept = (Array.isArray(spans) ? spans : []).filter((s) => !this.#dropped(s.name));
    if (kept.length === 0) return;
    await this.#post(this.#body(kept));
    if (this.#o.endThreadOnRootSpan) await this.#endThreads(kept);
  }

  #dropped(name) {
    return this.#o.filters.some((f) => f !== '' && (f.endsWith('*') ? String(name).startsWith(f.slice(0, -1)) : name === f));
  }

  /** The ExportTraceServiceRequest, as OTLP/JSON. */
  #body(spans) {
    const byResource = new Map();
    for (const span of spans) {
      const resource = span.resource ?? null;
      if (!byResource.has(resource)) byResource.set(resource, new Map());
      const scope = span.instrumentationScope ?? span.instrumentationLibrary ?? {};
      const scopes = byResource.get(resource);
      const sk = `${scope.name ?? ''}@${scope.version ?? ''}`;
      if (!scopes.has(sk)) scopes.set(sk, { scope, spans: [] });
      scopes.get(sk).spans.push(this.#span(span));
    }
    const resourceSpans = [];
    for (const [resource, scopes] of byResource) {
      const attrs = { ...(resource?.attributes ?? {}) };
      if (this.#o.serviceName && attrs['threadify.service'] === undefined) attrs['threadify.service'] = this.#o.serviceName;
      resourceSpans.push({
        resource: { attributes: keyValues(attrs) },
        scopeSpans: [...scopes.values()].map(({ scope, spans: list }) => ({
          scope: { name: scope.name ?? '', version: scope.version ?? '' },
          spans: list,
        })),
      });
    }
    return { resourceSpans };
  }

  #span(span) {
    const ctx = span.spanContext();
    const attrs = {};
    for (const [k, v] of Object.entries(span.attributes ?? {})) {
      if (v === undefined || v === null) continue;
      const refKey = this.#o.refsMap[k];
      attrs[refKey && !DIRECTIVES.has(k) ? `threadify.ref.${refKey}` : k] = v;
    }
    const tags = typeof this.#o.tags === 'function' ? this.#o.tags(span) : this.#o.tags;
    if (tags !== undefined && tags !== null && attrs['threadify.tags'] === undefined) {
      attrs['threadify.tags'] = JSON.stringify(Array.isArray(tags) ? tags.map(String) : [String(tags)]);
    }
    const key = typeof this.#o.threadKey === 'function' ? this.#o.threadKey(span) : this.#o.threadKey;
    if (typeof key === 'string' && key.trim() !== '' && attrs['threadify.thread_key'] === undefined) attrs['threadify.thread_key'] = key;
    const out = {
      traceId: ctx.traceId,
      spanId: ctx.spanId,
      name: span.name,
      kind: (Number.isInteger(span.kind) ? span.kind : 0) + 1, // the API's INTERNAL is 0, OTLP's 1
      startTimeUnixNano: nanos(span.startTime),
      endTimeUnixNano: nanos(span.endTime),
      attributes: keyValues(attrs),
      events: (span.events ?? []).map((e) => ({ name: e.name, timeUnixNano: nanos(e.time), attributes: keyValues(e.attributes ?? {}) })),
      links: (span.links ?? []).map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId, attributes: keyValues(l.attributes ?? {}) })),
      status: { code: span.status?.code ?? 0, ...(span.status?.message ? { message: span.status.message } : {}) },
    };
    const parent = parentOf(span);
    if (parent) out.parentSpanId = parent;
    if (ctx.traceState && typeof ctx.traceState.serialize === 'function') out.traceState = ctx.traceState.serialize();
    return out;
  }

  async #post(body) {
    const text = JSON.stringify(body);
    const { maxRetries, timeoutMs } = this.#o;
    for (let attempt = 0; ; attempt++) {
      let res;
      let failure;
      try {
        res = await this.#o.fetch(this.#url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-API-Key': this.#o.apiKey },
          body: text,
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (cause) {
        failure = new ThreadengineError(cause?.name === 'TimeoutError' ? ErrorCode.TIMEOUT : ErrorCode.ENGINE_UNREACHABLE,
          `exporting spans to ${this.#url} failed: ${cause?.cause?.code ?? cause?.message ?? 'request failed'}`, { cause });
      }
      let answer = null;
      if (res) {
        const raw = await res.text().catch(() => '');
        try { answer = raw ? JSON.parse(raw) : {}; } catch { answer = { message: raw.slice(0, 200) }; }
        if (res.ok) {
          const ps = answer?.partialSuccess;
          const rejected = Number(ps?.rejectedSpans ?? 0);
          if (rejected > 0) {
            throw new ThreadengineError(ErrorCode.SPANS_REJECTED, `the engine rejected ${rejected} span(s): ${ps.errorMessage ?? ''}`,
              { rejectedSpans: rejected, status: res.status });
          }
          return;
        }
        const byStatus = { 401: ErrorCode.INVALID_API_KEY, 403: ErrorCode.FORBIDDEN, 503: ErrorCode.ENGINE_UNAVAILABLE };
        // The engine's message starts with its error code ("limit_exceeded: …").
        const engineCode = /^([a-z_]+): /.exec(answer?.message ?? '')?.[1];
        failure = new ThreadengineError(byStatus[res.status] ?? engineCode ?? ErrorCode.ENGINE_ERROR,
          `${this.#url} answered HTTP ${res.status}: ${answer?.message ?? ''}`, { status: res.status, engineCode });
        if (!RETRYABLE.has(res.status)) throw failure;
      }
      if (attempt >= maxRetries) throw failure;
      const retryAfter = Number(res?.headers?.get?.('retry-after'));
      const delay = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : Math.min(5000, 250 * 2 ** attempt);
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  /**
   * endThreadOnRootSpan (the Threadify Node SDK's behaviour): a root span
   * that ended completes its thread (status OK/UNSET) or cancels it (ERROR,
   * with the status message), over the connection. The engine's OTLP
   * ingestion itself never ends a thread.
   */
  async #endThreads(spans) {
    for (const span of spans) {
      if (parentOf(span)) continue;
      const a = span.attributes ?? {};
      const traceId = span.spanContext().traceId;
      let threadId = typeof a['threadify.thread_id'] === 'string' ? a['threadify.thread_id'] : null;
      if (!threadId) {
        const found = await this.#conn.threadsByRef({ refKey: 'otel_trace_id', refValue: traceId, limit: 1 });
        threadId = found.threads[0]?.id ?? null;
      }
      if (!threadId) {
        const key = a['threadify.thread_key'] ?? (typeof this.#o.threadKey === 'function' ? this.#o.threadKey(span) : this.#o.threadKey);
        if (typeof key === 'string' && key.trim() !== '') threadId = (await this.#conn.thread(key)).threadId;
      }
      if (!threadId) throw new ThreadengineError(ErrorCode.NOT_FOUND, `no thread found for trace ${traceId} to end`);
      const t = this.#conn.threadById(threadId);
      if (span.status?.code === 2) {
        await t.cancel(span.status.message || 'Root span failed');
      } else {
        await t.complete('Root span completed successfully');
      }
    }
  }
}

function parentOf(span) {
  return span.parentSpanContext?.spanId ?? span.parentSpanId ?? null;
}

/** An OpenTelemetry HrTime ([seconds, nanoseconds]) as OTLP's decimal nanoseconds. */
function nanos(t) {
  if (!Array.isArray(t)) return '0';
  return (BigInt(Math.trunc(t[0])) * 1_000_000_000n + BigInt(Math.trunc(t[1]))).toString();
}

function keyValues(attrs) {
  return Object.entries(attrs).filter(([, v]) => v !== undefined && v !== null).map(([key, v]) => ({ key, value: anyValue(v) }));
}

function anyValue(v) {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  if (typeof v === 'bigint') return { intValue: v.toString() };
  if (Array.isArray(v)) return { arrayValue: { values: v.filter((x) => x !== undefined && x !== null).map(anyValue) } };
  if (v instanceof Uint8Array) return { bytesValue: btoa(String.fromCharCode(...v)) };
  if (typeof v === 'object') return { kvlistValue: { values: keyValues(v) } };
  return { stringValue: String(v) };
}
