import { ThreadengineError, ErrorCode, invalidArgument } from './errors.js';

const THREAD = 'id label contractId contractName contractVersion ownerId companyId status lastHash refs startedAt completedAt error';
const STEP = 'threadId stepName idempotencyKey status retryCount firstSeenAt lastUpdatedAt startedAt finishedAt latestStepID previousStep actor actorService latestContext verified verificationError';
const HISTORY = 'attempt timestamp status context error duration startedAt finishedAt metadata actor actorService';
const SUBSTEP = 'id threadId stepId name status payload recordedAt';
const VALIDATION = 'validationId threadId stepId stepName idempotencyKey timestamp validations { type message field expected actual rule severity } overallStatus hasCriticalViolation criticalCount warningCount minorCount infoCount totalValidations';
const DEFAULT_HISTORY_LIMIT = 50;
const INTEGRITY = 'verified lastVerifiedAt totalEvents brokenAt error';
const CAN = 'threadId stepName allowed status matchedBy requiredSteps satisfiedSteps missingSteps previousStep reason violations { field rule message }';

/** Reads can/should's arguments: a step name, or { action } / { goal } (exactly one). */
function decisionTarget(what, target) {
  const t = typeof target === 'string' ? { action: target } : target;
  if (t === null || typeof t !== 'object') throw invalidArgument(`${what}() needs a step name or { action } / { goal }`);
  const has = (v) => typeof v === 'string' && v.trim() !== '';
  if (has(t.action) === has(t.goal)) throw invalidArgument(`${what}() needs exactly one of action and goal`);
  return { action: has(t.action) ? t.action : null, goal: has(t.goal) ? t.goal : null };
}

// How often a read refused for a moment (429 limit_exceeded) is sent again.
const MAX_RETRIES = 5;

/** The retry time of a refusal in ms: extensions.retryAfter or Retry-After (seconds); undefined when neither says. */
function retryAfterMs(extSeconds, headers) {
  const s = Number(extSeconds ?? headers?.get?.('retry-after'));
  return Number.isFinite(s) && s > 0 ? s * 1000 : undefined;
}

/** How long to wait before sending a refused operation again, or null when it must not be. */
function retryDelayMs(err) {
  if (!(err instanceof ThreadengineError) || err.status !== 429 || err.engineCode !== 'limit_exceeded') return null;
  return err.retryAfterMs ?? 1000;
}

/** POSTs GraphQL to the engine and turns every failure into a ThreadengineError. */
export class GraphQLClient {
  constructor(url, apiKey, fetchImpl, timeoutMs = 30_000) {
    this.url = url;
    this.apiKey = apiKey;
    // Called unbound: browsers throw "Illegal invocation" when window.fetch
    // runs with another `this`.
    this.fetch = (input, init) => fetchImpl(input, init);
    this.timeoutMs = timeoutMs;
  }

  /**
   * Sends one GraphQL operation. A read the engine refuses for a moment —
   * 429 limit_exceeded with a retry time, e.g. the per-principal read budget
   * (docs/operators/limits.md) — is sent again after that time, at most
   * MAX_RETRIES times and never past timeoutMs in all; any other failure,
   * or the last refusal, is thrown.
   * @returns {Promise<{ data: any, extensions: Record<string, unknown> }>}
   */
  async request(query, variables = {}) {
    if (typeof query !== 'string' || query.trim() === '') throw invalidArgument('query must be a GraphQL document');
    const deadline = Date.now() + this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#once(query, variables);
      } catch (err) {
        const wait = retryDelayMs(err);
        if (wait === null || attempt >= MAX_RETRIES || Date.now() + wait > deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  async #once(query, variables) {
    let res;
    try {
      res = await this.fetch(this.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-API-Key': this.apiKey },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (cause) {
      if (cause?.name === 'TimeoutError') {
        throw new ThreadengineError(ErrorCode.TIMEOUT, `no answer from ${this.url} within ${this.timeoutMs} ms`, { cause });
      }
      const why = cause?.cause?.code ?? cause?.cause?.message ?? cause?.message ?? 'request failed';
      throw new ThreadengineError(ErrorCode.ENGINE_UNREACHABLE, `cannot reach the engine at ${this.url}: ${why}`, { cause });
    }
    let text;
    try {
      text = await res.text();
    } catch (cause) {
      const code = cause?.name === 'TimeoutError' ? ErrorCode.TIMEOUT : ErrorCode.ENGINE_UNREACHABLE;
      throw new ThreadengineError(code, `reading the answer from ${this.url} failed: ${cause?.message}`, { cause });
    }
    let body = null;
    try { body = JSON.parse(text); } catch { /* reported below */ }
    const errors = Array.isArray(body?.errors) ? body.errors : [];
    if (errors.length > 0) {
      const first = errors[0] ?? {};
      const ext = first.extensions ?? {};
      // Credentials problems get the SDK's code whatever the engine calls them.
      const code = res.status === 401 ? ErrorCode.INVALID_API_KEY : ext.code ?? ErrorCode.GRAPHQL_ERROR;
      throw new ThreadengineError(code, first.message ?? 'GraphQL error', {
        status: res.status, errors, data: body.data ?? null, complexity: ext.complexity, limit: ext.limit,
        engineCode: ext.code, retryAfterMs: retryAfterMs(ext.retryAfter, res.headers),
      });
    }
    if (!res.ok) {
      const byStatus = { 401: ErrorCode.INVALID_API_KEY, 403: ErrorCode.FORBIDDEN, 503: ErrorCode.ENGINE_UNAVAILABLE };
      const detail = body?.detail ?? body?.error ?? body?.title ?? text.slice(0, 200);
      throw new ThreadengineError(byStatus[res.status] ?? body?.code ?? ErrorCode.ENGINE_ERROR,
        `${this.url} answered HTTP ${res.status}: ${detail}`,
        { status: res.status, engineCode: body?.code, retryAfterMs: retryAfterMs(undefined, res.headers) });
    }
    if (body === null || typeof body !== 'object' || !('data' in body)) {
      throw new ThreadengineError(ErrorCode.ENGINE_ERROR, `${this.url} did not answer with a GraphQL response (is engineUrl right?)`,
        { status: res.status });
    }
    return { data: body.data, extensions: body.extensions ?? {} };
  }
}

function parseJSON(v) {
  if (typeof v !== 'string') return v ?? null;
  try { return JSON.parse(v); } catch { return v; }
}

function history(h) {
  return { ...h, context: parseJSON(h.context) ?? {}, metadata: parseJSON(h.metadata) };
}

function stepFilter(filter) {
  if (filter === undefined || filter === null) return {};
  if (typeof filter === 'string') {
    const i = filter.indexOf(':');
    return i < 0 ? { stepName: filter } : { stepName: filter.slice(0, i), idempotencyKey: filter.slice(i + 1) };
  }
  if (typeof filter !== 'object') throw invalidArgument('step filter must be "name", "name:idempotencyKey" or { stepName, idempotencyKey, status }');
  return filter;
}

function required(v, name) {
  if (typeof v !== 'string' || v === '') throw invalidArgument(`${name} is required`);
  return v;
}

/** The read API over GraphQL; Connection's read methods delegate here. */
export class Reader {
  constructor(client) {
    this.client = client;
  }

  async #data(query, variables) {
    return (await this.client.request(query, variables)).data;
  }

  async getThread(threadId) {
    required(threadId, 'threadId');
    const d = await this.#data(`query GetThread($id: ID!) { thread(id: $id) { ${THREAD} } }`, { id: threadId });
    if (!d.thread) {
      throw new ThreadengineError(ErrorCode.NOT_FOUND, `thread ${threadId} does not exist or this API key cannot see it`);
    }
    return new ThreadView(this, d.thread);
  }

  async threads(filter = {}) {
    const d = await this.#data(`query Threads($actor: String, $contractName: String, $contractVersion: Int, $status: String,
      $startedAfter: String, $startedBefore: String, $completedAfter: String, $completedBefore: String, $limit: Int, $offset: Int) {
      threads(actor: $actor, contractName: $contractName, contractVersion: $contractVersion, status: $status,
        startedAfter: $startedAfter, startedBefore: $startedBefore, completedAfter: $completedAfter,
        completedBefore: $completedBefore, limit: $limit, offset: $offset) { totalCount threads { ${THREAD} } } }`, filter);
    return { totalCount: d.threads.totalCount, threads: d.threads.threads.map((t) => new ThreadView(this, t)) };
  }

  async threadsByRef(filter = {}) {
    required(filter.refValue, 'refValue');
    const d = await this.#data(`query ThreadsByRef($refKey: String, $refValue: String!, $status: String, $startedAfter: String,
      $startedBefore: String, $limit: Int, $offset: Int) {
      threadsByRef(refKey: $refKey, refValue: $refValue, status: $status, startedAfter: $startedAfter,
        startedBefore: $startedBefore, limit: $limit, offset: $offset) { totalCount threads { ${THREAD} } } }`, filter);
    return { totalCount: d.threadsByRef.totalCount, threads: d.threadsByRef.threads.map((t) => new ThreadView(this, t)) };
  }

  async getThreadByRef(filter = {}) {
    const c = await this.threadsByRef({ refKey: filter.refKey, refValue: filter.refValue, limit: 1 });
    return c.threads[0] ?? null;
  }

  async threadChain(rootId, maxDepth = 3) {
    required(rootId, 'rootId');
    const d = await this.#data(`query ThreadChain($rootId: ID!, $maxDepth: Int) { threadChain(rootId: $rootId, maxDepth: $maxDepth) { ${THREAD} } }`,
      { rootId, maxDepth });
    return d.threadChain.map((t) => new ThreadView(this, t));
  }

  /**
   * Step states of a thread (each with its latest attempt). One query when
   * it fits the engine's cost limit; a thread with more steps than that
   * (the limit prices every field of every step) is read as its step
   * identities first, then each identity's state, 4 queries at a time.
   */
  async steps(threadId, filter) {
    required(threadId, 'threadId');
    const f = stepFilter(filter);
    const vars = { id: threadId, stepName: f.stepName, idempotencyKey: f.idempotencyKey, status: f.status };
    const select = (fields) => `query Steps($id: ID!, $stepName: String, $idempotencyKey: String, $status: String) {
      thread(id: $id) { steps(stepName: $stepName, idempotencyKey: $idempotencyKey, status: $status) { ${fields} } } }`;
    const full = `${STEP} history(limit: 1) { ${HISTORY} }`;
    let d;
    try {
      d = await this.#data(select(full), vars);
    } catch (err) {
      if (err.code !== ErrorCode.COMPLEXITY_LIMIT_EXCEEDED) throw err;
      const ids = await this.#data(select('stepName idempotencyKey'), vars);
      if (!ids.thread) throw new ThreadengineError(ErrorCode.NOT_FOUND, `thread ${threadId} does not exist or this API key cannot see it`);
      const list = ids.thread.steps;
      const out = new Array(list.length);
      let next = 0;
      const worker = async () => {
        while (next < list.length) {
          const i = next++;
          const one = await this.#data(select(full), { ...vars, stepName: list[i].stepName, idempotencyKey: list[i].idempotencyKey });
          out[i] = one.thread?.steps?.[0];
        }
      };
      await Promise.all(Array.from({ length: Math.min(4, list.length) }, worker));
      return out.filter(Boolean).map((s) => new StepView(this, s));
    }
    if (!d.thread) throw new ThreadengineError(ErrorCode.NOT_FOUND, `thread ${threadId} does not exist or this API key cannot see it`);
    return d.thread.steps.map((s) => new StepView(this, s));
  }

  /**
   * Attempts of one step (every key unless idempotencyKey is given), newest
   * first; limit defaults to 50 (the engine's 100 with every field selected
   * would exceed its 1000-point cost limit).
   */
  async stepHistory(filter = {}) {
    required(filter.threadId, 'threadId');
    required(filter.stepName, 'stepName');
    filter = { ...filter, limit: filter.limit ?? DEFAULT_HISTORY_LIMIT };
    const d = await this.#data(`query StepHistory($threadId: String!, $stepName: String!, $idempotencyKey: String, $limit: Int, $offset: Int,
      $startAt: String, $endAt: String, $activityType: String, $actor: String) {
      stepHistory(threadId: $threadId, stepName: $stepName, idempotencyKey: $idempotencyKey, limit: $limit, offset: $offset,
        startAt: $startAt, endAt: $endAt, activityType: $activityType, actor: $actor) { ${HISTORY} } }`, filter);
    return d.stepHistory.map(history);
  }

  async subSteps(threadId, stepName, idempotencyKey) {
    const d = await this.#data(`query SubSteps($id: ID!, $stepName: String, $idempotencyKey: String) {
      thread(id: $id) { steps(stepName: $stepName, idempotencyKey: $idempotencyKey) { subSteps { ${SUBSTEP} } } } }`,
    { id: threadId, stepName, idempotencyKey });
    return (d.thread?.steps ?? []).flatMap((s) => s.subSteps.map((x) => ({ ...x, payload: parseJSON(x.payload) })));
  }

  /**
   * Validation results of a thread, newest first. options: stepName,
   * idempotencyKey, stepId, validationType, limit (default 10, max 100), offset.
   */
  async validationResults(threadId, options = {}) {
    required(threadId, 'threadId');
    if (options === null || typeof options !== 'object') throw invalidArgument('options must be an object');
    const d = await this.#data(`query Validations($id: ID!, $options: ValidationQueryOptions) {
      thread(id: $id) { validationResults(options: $options) { ${VALIDATION} } } }`, { id: threadId, options });
    if (!d.thread) throw new ThreadengineError(ErrorCode.NOT_FOUND, `thread ${threadId} does not exist or this API key cannot see it`);
    return d.thread.validationResults;
  }

  /**
   * The thread, its step states each with its attempts (newest first, up
   * to stepHistoryLimit, default 50) and its latest validation results (up
   * to validationLimit, default 10): the Threadify SDKs' getCompleteData.
   * Read in several queries (steps, each step's history, validations) so
   * it stays within the engine's query cost limit whatever the thread's
   * size; history reads run 4 at a time.
   */
  async completeData(threadId, options = {}) {
    required(threadId, 'threadId');
    const { stepName, idempotencyKey, status, stepHistoryLimit = DEFAULT_HISTORY_LIMIT, validationLimit = 10 } = options;
    const [thread, steps, validationResults] = await Promise.all([
      this.getThread(threadId),
      this.steps(threadId, { stepName, idempotencyKey, status }),
      this.validationResults(threadId, { limit: validationLimit }),
    ]);
    const withHistory = new Array(steps.length);
    let next = 0;
    const worker = async () => {
      while (next < steps.length) {
        const i = next++;
        const s = steps[i];
        withHistory[i] = { ...s, history: await s.history({ limit: stepHistoryLimit }) };
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, steps.length) }, worker));
    return { ...thread, steps: withHistory, validationResults };
  }

  /**
   * May the caller record a step of a contract thread now? Read-only: nothing is reserved (a later report
   * or waitFor is judged again). target: a step name, { action } or { goal }; context (optional) is judged
   * as the step's context would be.
   */
  async can(threadId, target, context) {
    required(threadId, 'threadId');
    const { action, goal } = decisionTarget('can', target);
    if (context !== undefined && context !== null && (typeof context !== 'object' || Array.isArray(context))) {
      throw invalidArgument('can() context must be an object of strings, numbers and booleans');
    }
    const d = await this.#data(`query Can($threadId: ID!, $action: String, $goal: String, $context: JSON) {
      can(threadId: $threadId, action: $action, goal: $goal, context: $context) { ${CAN} } }`,
    { threadId, action, goal, context: context ?? null });
    return d.can;
  }

  /** Advice on an action: { eligible, recommendation: yes|no|uncertain|unavailable, reason }. Never a permission. */
  async should(threadId, target) {
    required(threadId, 'threadId');
    const { action, goal } = decisionTarget('should', target);
    const d = await this.#data(`query Should($threadId: ID!, $action: String, $goal: String) {
      should(threadId: $threadId, action: $action, goal: $goal) { threadId stepName eligible recommendation reason } }`,
    { threadId, action, goal });
    return d.should;
  }

  /** The paths open from now: { threadId, paths: [{ actions, status, reason }] }; only each first action is judged now. */
  async next(threadId) {
    required(threadId, 'threadId');
    const d = await this.#data(`query Next($threadId: ID!) { next(threadId: $threadId) { threadId paths { actions status reason } } }`,
      { threadId });
    return d.next;
  }

  /** Recomputes the thread's hash chain: { verified, totalEvents, brokenAt, error, lastVerifiedAt }. */
  async verifyIntegrity(threadId) {
    required(threadId, 'threadId');
    const d = await this.#data(`query Verify($id: String!) { verifyThreadIntegrity(threadId: $id) { ${INTEGRITY} } }`, { id: threadId });
    return d.verifyThreadIntegrity;
  }
}

/** A thread as the engine stored it, with methods to read more of it. */
export class ThreadView {
  #r;

  constructor(reader, t) {
    this.#r = reader;
    Object.assign(this, t);
    this.refs = parseJSON(t.refs) ?? {};
  }

  get threadId() { return this.id; }

  /** Step states; filter "name", "name:idempotencyKey" or { stepName, idempotencyKey, status }. */
  steps(filter) { return this.#r.steps(this.id, filter); }
  /** Attempts of one step, newest first. */
  history(stepName, options = {}) { return this.#r.stepHistory({ ...options, threadId: this.id, stepName }); }
  validationResults(options) { return this.#r.validationResults(this.id, options); }
  verifyIntegrity() { return this.#r.verifyIntegrity(this.id); }
  chain(maxDepth) { return this.#r.threadChain(this.id, maxDepth); }
  /** The thread as stored now. */
  refresh() { return this.#r.getThread(this.id); }
  /** The thread with every step's attempts and its validation results, in one object (getCompleteData of the Threadify SDKs). */
  getCompleteData(options) { return this.#r.completeData(this.id, options); }
}

/** One step identity (name + idempotency key) of a thread. */
export class StepView {
  #r;

  constructor(reader, s) {
    this.#r = reader;
    const { history: latest, ...rest } = s;
    Object.assign(this, rest);
    this.latestContext = parseJSON(s.latestContext) ?? {};
    /** The latest attempt. */
    this.lastExecution = latest?.[0] ? history(latest[0]) : null;
  }

  /** Attempts of this step identity, newest first; options: limit, offset, startAt, endAt, actor. */
  history(options = {}) {
    return this.#r.stepHistory({ ...options, threadId: this.threadId, stepName: this.stepName, idempotencyKey: this.idempotencyKey });
  }

  subSteps() { return this.#r.subSteps(this.threadId, this.stepName, this.idempotencyKey); }
}
