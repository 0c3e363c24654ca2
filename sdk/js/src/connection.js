import { ThreadengineError, ErrorCode, invalidArgument } from './errors.js';
import { deriveEndpoints } from './endpoints.js';
import { resolveWebSocket, frameText } from './transport.js';
import { Notification, EVENTS, eventMatches } from './notification.js';
import { GraphQLClient, Reader } from './reader.js';
import { Thread, threadFromReply } from './thread.js';
import { stringMap } from './values.js';
import { ThreadengineSpanExporter } from './otel.js';

/** The engine refuses frames over 1 MiB; larger messages are refused here, before sending. */
export const MAX_FRAME_BYTES = 1 << 20;

/** The engine's bound on an application thread key (UTF-8 bytes). */
const MAX_THREAD_KEY_BYTES = 1024;
const THREAD_OPTIONS = ['label', 'contract', 'role', 'refs', 'tags', 'serviceName'];
const DEFAULT_RECONNECT = Object.freeze({ initialDelayMs: 250, maxDelayMs: 10_000, maxAttempts: Infinity });
const SEEN_NOTIFICATIONS = 10_000;
const utf8 = new TextEncoder();

/**
 * Opens a connection to the engine.
 *
 * @param {import('../index.js').ConnectOptions} options
 * @returns {Promise<Connection>}
 */
export async function connect(options) {
  if (options === null || typeof options !== 'object') {
    throw invalidArgument('connect() takes an options object: { engineUrl, apiKey, serviceName }');
  }
  const endpoints = deriveEndpoints(options.engineUrl);
  if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
    throw invalidArgument('apiKey is required (an engine API key, td_…)');
  }
  const serviceName = options.serviceName ?? null;
  if (serviceName !== null && typeof serviceName !== 'string') throw invalidArgument('serviceName must be a string');
  const maxInFlight = options.maxInFlight ?? 10;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1 || maxInFlight > 100) {
    throw invalidArgument('maxInFlight must be an integer from 1 to 100');
  }
  const ms = (name, def) => {
    const v = options[name] ?? def;
    if (typeof v !== 'number' || !(v > 0)) throw invalidArgument(`${name} must be a positive number of milliseconds`);
    return v;
  };
  let reconnect = false;
  if (options.reconnect !== false) {
    reconnect = { ...DEFAULT_RECONNECT, ...(typeof options.reconnect === 'object' ? options.reconnect : {}) };
    for (const k of ['initialDelayMs', 'maxDelayMs', 'maxAttempts']) {
      if (typeof reconnect[k] !== 'number' || !(reconnect[k] > 0)) throw invalidArgument(`reconnect.${k} must be a positive number`);
    }
  }
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') throw invalidArgument('no fetch implementation: use Node.js 18 or later, or pass connect({ fetch })');
  const WebSocketImpl = await resolveWebSocket(options.WebSocket);
  const conn = new Connection({
    ...endpoints,
    apiKey: options.apiKey,
    serviceName,
    maxInFlight,
    connectTimeoutMs: ms('connectTimeoutMs', 10_000),
    requestTimeoutMs: ms('requestTimeoutMs', 30_000),
    heartbeatIntervalMs: ms('heartbeatIntervalMs', 30_000),
    maxQueuedRequests: options.maxQueuedRequests ?? 10_000,
    reconnect,
    WebSocket: WebSocketImpl,
    fetch: fetchImpl,
    logger: options.logger ?? null,
  });
  await conn._open();
  return conn;
}

/**
 * A connection to one engine: writes go over the WebSocket (`/threads`),
 * reads over GraphQL (`/graphql`). It reconnects with exponential backoff
 * when the socket drops; requests the engine never answered are re-sent with
 * the same idempotency key and invocation id, so the engine records each step
 * attempt once.
 */
export class Connection {
  #o;
  #ws = null;
  /** @type {'connecting'|'open'|'reconnecting'|'closing'|'closed'} */
  #state = 'connecting';
  #seq = 0;
  /** requestId → entry; insertion order is send order. */
  #pending = new Map();
  /** Subscriptions: { event, key, handler }. */
  #subs = [];
  /** Threads joined on this connection, re-joined after a reconnect so their notifications keep coming. */
  #joins = new Map();
  /** Threads of thread(key) on this connection (threadId → frame), resumed after a reconnect for the same reason. */
  #keyed = new Map();
  #listeners = new Map();
  #seen = new Set();
  #heartbeat = null;
  #lastFrameAt = 0;
  #reconnectTimer = null;
  #attempt = 0;
  #closedError = null;

  /** @internal use connect() */
  constructor(o) {
    this.#o = o;
    this.engineUrl = o.engineUrl;
    this.wsUrl = o.wsUrl;
    this.graphqlUrl = o.graphqlUrl;
    this.serviceName = o.serviceName;
    this.ownerId = null;
    this.companyId = null;
    this.reader = new Reader(new GraphQLClient(o.graphqlUrl, o.apiKey, o.fetch, o.requestTimeoutMs));
  }

  /** 'connecting' | 'open' | 'reconnecting' | 'closing' | 'closed' */
  get state() { return this.#state; }
  get isConnected() { return this.#state === 'open'; }
  /** @internal for the span exporter (a prototype getter: not enumerable, not in JSON). */
  get _apiKey() { return this.#o.apiKey; }
  /** @internal */
  get _fetch() { return this.#o.fetch; }

  /**
   * An OpenTelemetry span exporter sending to this engine with this
   * connection's key (see ThreadengineSpanExporter).
   */
  createSpanExporter(options = {}) { return new ThreadengineSpanExporter(this, options); }

  /**
   * Listens to connection events: 'disconnected', 'reconnecting',
   * 'reconnected', 'closed' and 'error' (a notification handler threw).
   * Returns a function that removes the listener.
   */
  on(event, fn) {
    if (!this.#listeners.has(event)) this.#listeners.set(event, new Set());
    this.#listeners.get(event).add(fn);
    return () => this.off(event, fn);
  }

  off(event, fn) { this.#listeners.get(event)?.delete(fn); }

  #emit(event, arg) {
    for (const fn of this.#listeners.get(event) ?? []) {
      try { fn(arg); } catch (err) { this.#log('listener for', event, 'threw', err); }
    }
  }

  #log(...args) { this.#o.logger?.debug?.('[threadengine]', ...args); }

  // ---- socket lifecycle ----------------------------------------------------

  /** @internal */
  async _open() {
    const { ws, reply } = await this.#handshake();
    this.ownerId = reply.ownerId ?? null;
    this.companyId = reply.companyId ?? null;
    this.#attach(ws);
  }

  /** Opens a socket and completes the connect exchange on it. */
  #handshake() {
    const o = this.#o;
    return new Promise((resolve, reject) => {
      let ws;
      try {
        ws = new o.WebSocket(o.wsUrl);
      } catch (cause) {
        reject(new ThreadengineError(ErrorCode.ENGINE_UNREACHABLE, `cannot reach the engine at ${o.wsUrl}: ${cause.message}`, { cause }));
        return;
      }
      ws.binaryType = 'arraybuffer';
      // Kept for the socket's whole life: the ws package throws an 'error'
      // event nobody listens to (closing a socket that is still connecting,
      // for one), which would crash the process.
      ws.addEventListener('error', () => {});
      let done = false;
      const finish = (err, value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        ws.removeEventListener('open', onOpen);
        ws.removeEventListener('message', onMessage);
        ws.removeEventListener('error', onError);
        ws.removeEventListener('close', onClose);
        if (err) {
          closeQuietly(ws);
          reject(err);
        } else {
          resolve(value);
        }
      };
      const timer = setTimeout(() => finish(new ThreadengineError(ErrorCode.TIMEOUT,
        `the engine at ${o.wsUrl} did not answer connect within ${o.connectTimeoutMs} ms`)), o.connectTimeoutMs);
      const onOpen = () => {
        ws.send(JSON.stringify({ action: 'connect', apiKey: o.apiKey, serviceName: o.serviceName, maxInFlight: o.maxInFlight }));
      };
      const onMessage = (ev) => {
        let m;
        try { m = JSON.parse(frameText(ev.data)); } catch { return; }
        if (m?.action !== 'connect') return;
        if (m.status === 'success') {
          finish(null, { ws, reply: m });
        } else if (/invalid api key/i.test(m.message ?? '')) {
          finish(new ThreadengineError(ErrorCode.INVALID_API_KEY,
            `the engine at ${o.wsUrl} refused the API key (invalid, revoked, expired, or its user is not active)`));
        } else if (/temporarily unavailable/i.test(m.message ?? '')) {
          finish(new ThreadengineError(ErrorCode.ENGINE_UNAVAILABLE, `the engine at ${o.wsUrl}: ${m.message}`));
        } else {
          finish(new ThreadengineError(m.code ?? ErrorCode.ENGINE_ERROR, `connect failed: ${m.message ?? 'no message'}`));
        }
      };
      const onError = (ev) => finish(new ThreadengineError(ErrorCode.ENGINE_UNREACHABLE,
        `cannot reach the engine at ${o.wsUrl}: ${ev?.message || ev?.error?.message || 'connection failed'}`));
      const onClose = (ev) => finish(new ThreadengineError(ErrorCode.ENGINE_UNREACHABLE,
        `the engine at ${o.wsUrl} closed the connection before connect completed (close code ${ev?.code ?? 'unknown'})`));
      ws.addEventListener('open', onOpen);
      ws.addEventListener('message', onMessage);
      ws.addEventListener('error', onError);
      ws.addEventListener('close', onClose);
    });
  }

  #attach(ws) {
    this.#ws = ws;
    this.#state = 'open';
    this.#lastFrameAt = Date.now();
    ws.addEventListener('message', (ev) => { if (ws === this.#ws) this.#onFrame(frameText(ev.data)); });
    ws.addEventListener('close', (ev) => this.#onSocketGone(ws, ev?.code, ev?.reason));
    const every = this.#o.heartbeatIntervalMs;
    this.#heartbeat = setInterval(() => {
      if (Date.now() - this.#lastFrameAt > 2 * every + 1000) {
        // Nothing, not even a heartbeat reply, for two periods: the path is dead
        // although the socket still looks open.
        this.#onSocketGone(ws, 1006, 'no frames from the engine');
        terminate(ws);
        return;
      }
      this.#sendUntracked({ action: 'heartbeat' });
    }, every);
    for (const e of this.#pending.values()) {
      if (!e.sent) this.#transmit(e);
    }
  }

  #onSocketGone(ws, code, reason) {
    if (ws !== this.#ws) return;
    this.#ws = null;
    clearInterval(this.#heartbeat);
    this.#heartbeat = null;
    if (this.#state === 'closing' || this.#state === 'closed') {
      this.#finish(new ThreadengineError(ErrorCode.CONNECTION_CLOSED, 'the connection was closed'));
      return;
    }
    for (const e of [...this.#pending.values()]) {
      clearTimeout(e.timer);
      if (e.sent && !e.replayable) {
        this.#pending.delete(e.id);
        e.reject(new ThreadengineError(ErrorCode.CONNECTION_LOST,
          `the connection to the engine dropped before it answered ${e.action}; ${e.lostHint}`));
      }
      e.sent = false;
    }
    if (!this.#o.reconnect) {
      this.#finish(new ThreadengineError(ErrorCode.CONNECTION_LOST, `the connection to ${this.#o.wsUrl} dropped (close code ${code ?? 'unknown'})`));
      return;
    }
    this.#state = 'reconnecting';
    this.#emit('disconnected', { code, reason });
    this.#scheduleReconnect();
  }

  #scheduleReconnect() {
    const r = this.#o.reconnect;
    if (this.#attempt >= r.maxAttempts) {
      this.#finish(new ThreadengineError(ErrorCode.CONNECTION_LOST,
        `gave up reconnecting to ${this.#o.wsUrl} after ${this.#attempt} attempts`));
      return;
    }
    const base = Math.min(r.maxDelayMs, r.initialDelayMs * 2 ** this.#attempt);
    const delayMs = Math.round(base / 2 + (Math.random() * base) / 2);
    this.#attempt++;
    this.#emit('reconnecting', { attempt: this.#attempt, delayMs });
    this.#reconnectTimer = setTimeout(async () => {
      this.#reconnectTimer = null;
      if (this.#state !== 'reconnecting') return;
      let opened;
      try {
        opened = await this.#handshake();
      } catch (err) {
        if (this.#state !== 'reconnecting') return;
        if (err.code === ErrorCode.INVALID_API_KEY) {
          this.#finish(err);
        } else {
          this.#log('reconnect attempt failed:', err.message);
          this.#scheduleReconnect();
        }
        return;
      }
      if (this.#state !== 'reconnecting') {
        closeQuietly(opened.ws);
        return;
      }
      this.#attempt = 0;
      this.#restore(opened.ws);
      this.#emit('reconnected', {});
    }, delayMs);
  }

  /** Re-creates the session state the engine keeps per socket, then re-sends what was never answered. */
  #restore(ws) {
    for (const j of this.#joins.values()) {
      ws.send(JSON.stringify({ ...j, action: 'joinThread', requestId: this.#untrackedId() }));
    }
    for (const k of this.#keyed.values()) {
      ws.send(JSON.stringify({ ...k, action: 'thread', serviceName: this.serviceName, requestId: this.#untrackedId() }));
    }
    for (const [key, eventTypes] of this.#subscriptionSets()) {
      ws.send(JSON.stringify({ action: 'subscribe', stepName: key, eventTypes, requestId: this.#untrackedId() }));
    }
    this.#attach(ws);
  }

  /** Rejects everything outstanding and releases every timer, so the process can exit. */
  #finish(err) {
    const wasClosed = this.#state === 'closed';
    this.#state = 'closed';
    this.#closedError = err;
    clearInterval(this.#heartbeat);
    clearTimeout(this.#reconnectTimer);
    this.#heartbeat = this.#reconnectTimer = null;
    for (const e of this.#pending.values()) {
      clearTimeout(e.timer);
      e.reject(err);
    }
    this.#pending.clear();
    if (this.#ws) {
      closeQuietly(this.#ws);
      this.#ws = null;
    }
    if (!wasClosed) this.#emit('closed', err);
  }

  /**
   * Closes the connection: asks the engine to close (waiting up to 5 s for it),
   * then rejects anything still unanswered with `connection_closed`.
   */
  async close() {
    if (this.#state === 'closed' || this.#state === 'closing') return;
    const ws = this.#state === 'open' ? this.#ws : null;
    this.#state = 'closing';
    if (ws) {
      await new Promise((resolve) => {
        const t = setTimeout(resolve, 5000);
        ws.addEventListener('close', () => { clearTimeout(t); resolve(); });
        try {
          ws.send(JSON.stringify({ action: 'closeConnection', requestId: this.#untrackedId() }));
        } catch {
          clearTimeout(t);
          resolve();
        }
      });
    }
    this.#finish(new ThreadengineError(ErrorCode.CONNECTION_CLOSED, 'the connection was closed'));
  }

  // ---- requests --------------------------------------------------------------

  #untrackedId() { return `u${++this.#seq}`; }

  #sendUntracked(msg) {
    if (this.#state !== 'open') return;
    try { this.#ws.send(JSON.stringify({ ...msg, requestId: this.#untrackedId() })); } catch { /* the close handler recovers */ }
  }

  /** Sends a frame as is (cancelWait has no requestId and gets no reply). */
  #sendRaw(msg) {
    if (this.#state !== 'open') return;
    try { this.#ws.send(JSON.stringify(msg)); } catch { /* the close handler recovers */ }
  }

  /**
   * Sends one request and resolves with the engine's success reply.
   *
   * - replayable: safe to send again when the socket dropped before the
   *   reply (the engine deduplicates it); otherwise such a request is
   *   rejected with connection_lost and lostHint.
   * - timeoutMs: how long to wait for the reply once sent (default
   *   requestTimeoutMs); timeoutError() builds the rejection.
   * - deadlineMs: instead of timeoutMs, one deadline from now, running
   *   while disconnected too (a wait's own timeout).
   * - prepare(): called before every transmission (the first and each
   *   re-send after a reconnect) to refresh the frame (a wait's remaining
   *   time); it may return an Error instead, which rejects the request.
   * - cancelFrame(requestId): the frame sent (without a requestId of its
   *   own) when the request is given up after being sent — timeout or abort
   *   — so the engine stops working on it (cancelWait).
   * - signal: an AbortSignal; abortError() builds the rejection.
   * @internal
   */
  _request(msg, o = {}) {
    const { replayable = true, lostHint = 'the outcome is unknown' } = o;
    if (this.#state === 'closed' || this.#state === 'closing') {
      return Promise.reject(this.#closedError ?? new ThreadengineError(ErrorCode.CONNECTION_CLOSED, 'the connection is closed'));
    }
    if (this.#state !== 'open' && this.#pending.size >= this.#o.maxQueuedRequests) {
      return Promise.reject(new ThreadengineError(ErrorCode.CONNECTION_LOST,
        `not connected to the engine and ${this.#pending.size} requests are already waiting`));
    }
    if (o.signal?.aborted) return Promise.reject(o.abortError());
    const id = `r${++this.#seq}`;
    const text = JSON.stringify({ ...msg, requestId: id });
    const size = utf8.encode(text).length;
    if (size > MAX_FRAME_BYTES) {
      return Promise.reject(invalidArgument(`${msg.action} is ${size} bytes as JSON; the engine accepts at most ${MAX_FRAME_BYTES} bytes per message`));
    }
    return new Promise((resolve, reject) => {
      const e = { id, action: msg.action, text, replayable, lostHint, sent: false, timer: null,
        timeoutMs: o.timeoutMs ?? this.#o.requestTimeoutMs, timeoutError: o.timeoutError, prepare: o.prepare,
        cancelFrame: o.cancelFrame, signal: o.signal, onAbort: null, resolve: null, reject: null, deadline: null };
      const cleanup = () => {
        clearTimeout(e.timer);
        clearTimeout(e.deadline);
        if (e.onAbort) e.signal.removeEventListener('abort', e.onAbort);
      };
      e.resolve = (v) => { cleanup(); resolve(v); };
      e.reject = (err) => { cleanup(); reject(err); };
      if (e.signal) {
        e.onAbort = () => this.#giveUp(e, o.abortError());
        e.signal.addEventListener('abort', e.onAbort, { once: true });
      }
      if (o.deadlineMs !== undefined) {
        e.timeoutMs = null;
        e.deadline = setTimeout(() => this.#giveUp(e, e.timeoutError?.() ??
          new ThreadengineError(ErrorCode.TIMEOUT, `no reply to ${e.action} within ${o.deadlineMs} ms`)), o.deadlineMs);
      }
      this.#pending.set(id, e);
      if (this.#state === 'open') this.#transmit(e);
    });
  }

  /** Ends a request before its reply: a cancelFrame tells the engine, if it got the request. */
  #giveUp(e, err) {
    if (this.#pending.get(e.id) !== e) return;
    this.#pending.delete(e.id);
    if (e.sent && e.cancelFrame) this.#sendRaw(e.cancelFrame(e.id));
    e.reject(err);
  }

  #transmit(e) {
    if (e.prepare) {
      const msg = e.prepare();
      if (msg instanceof Error) {
        this.#pending.delete(e.id);
        e.reject(msg);
        return;
      }
      e.text = JSON.stringify({ ...msg, requestId: e.id });
    }
    try {
      this.#ws.send(e.text);
    } catch {
      return; // the socket is going away; the close handler re-sends or rejects
    }
    e.sent = true;
    clearTimeout(e.timer);
    if (e.timeoutMs === null) return; // bounded by its deadline
    e.timer = setTimeout(() => this.#giveUp(e, e.timeoutError?.() ??
      new ThreadengineError(ErrorCode.TIMEOUT, `no reply to ${e.action} within ${e.timeoutMs} ms`)), e.timeoutMs);
  }

  #onFrame(text) {
    this.#lastFrameAt = Date.now();
    let m;
    try { m = JSON.parse(text); } catch { this.#log('ignoring a frame that is not JSON'); return; }
    if (m === null || typeof m !== 'object') return;
    if (m.action === 'notification') {
      this.#onNotification(m.notification, m.ackToken);
      return;
    }
    if (m.action === 'notification_batch') {
      for (const n of Array.isArray(m.notifications) ? m.notifications : []) this.#onNotification(n, null);
      return;
    }
    let e;
    if (typeof m.requestId === 'string' && m.requestId !== '') {
      e = this.#pending.get(m.requestId);
    } else {
      // An engine that does not echo requestId answers in order: the oldest
      // sent request with the same action is the one answered.
      const same = (a) => a === m.action || (a === 'threadEnd' && m.action === 'closeThread');
      e = [...this.#pending.values()].find((x) => x.sent && same(x.action));
    }
    if (!e) return;
    this.#pending.delete(e.id);
    if (m.status === 'success' || (m.action === 'recordThreadEvent' && m.isDuplicate === true)) {
      e.resolve(m);
    } else {
      e.reject(new ThreadengineError(m.code ?? ErrorCode.ENGINE_ERROR, m.message ?? `${e.action} failed`,
        { action: e.action, details: m.details, reply: m }));
    }
  }

  // ---- writing -------------------------------------------------------------------

  /**
   * Starts a thread. start(label?, options?) with options { contract, refs,
   * tags, role, serviceName }; contract is "name" (latest) or "name:version".
   * @returns {Promise<Thread>}
   */
  async start(label, options) {
    if (label !== null && typeof label === 'object' && options === undefined) {
      options = label;
      label = undefined;
    }
    const o = options ?? {};
    if (label !== undefined && label !== null && typeof label !== 'string') throw invalidArgument('label must be a string');
    const contract = o.contract ?? o.contractName ?? null;
    if (contract !== null && (typeof contract !== 'string' || contract.trim() === '')) {
      throw invalidArgument('contract must be "name" or "name:version"');
    }
    const serviceName = o.serviceName ?? this.serviceName;
    const refs = { serviceName };
    if (label) refs.label = label;
    Object.assign(refs, stringMap(o.refs ?? {}, 'refs'));
    const msg = { action: 'startThread', contractName: contract, refs };
    if (o.tags !== undefined) {
      if (!Array.isArray(o.tags) || o.tags.some((t) => typeof t !== 'string')) throw invalidArgument('tags must be an array of strings');
      if (o.tags.length > 0) msg.tags = o.tags;
    }
    if (contract !== null) msg.role = o.role ?? (serviceName ? serviceName.replace(/-service$/, '') : 'participant');
    const reply = await this._request(msg, {
      replayable: false,
      lostHint: 'the thread may or may not have been started; look it up by one of its refs (threadsByRef) before starting it again',
    });
    return threadFromReply(this, reply, { refs, role: msg.role ?? null, accessLevel: 'owner' });
  }

  /**
   * Joins a thread, with an invitation token (from inviteParty) or directly by
   * id (same organisation) with an optional role.
   * @returns {Promise<Thread>}
   */
  async join(tokenOrThreadId, role) {
    if (typeof tokenOrThreadId !== 'string' || tokenOrThreadId === '') throw invalidArgument('join() needs a thread token or a thread id');
    const byToken = !role && (tokenOrThreadId.split('.').length === 3 || tokenOrThreadId.length > 50);
    const msg = byToken ? { threadToken: tokenOrThreadId } : { threadId: tokenOrThreadId, ...(role ? { role } : {}) };
    const reply = await this._request({ action: 'joinThread', ...msg });
    this.#joins.set(reply.threadId, msg);
    return threadFromReply(this, reply, { role: reply.role ?? null, accessLevel: reply.accessLevel ?? null });
  }

  /**
   * Starts or resumes the one thread of an application key — an order id, a
   * run id — so services, workers and retries share a thread without storing
   * the engine's id (one thread per key, also under concurrent calls on
   * several replicas). options (label, contract, role, refs, tags,
   * serviceName) apply when the thread is created; resuming returns the
   * stored label, refs, tags and contract (another contract is refused with
   * contract_conflict, an ended thread with thread_closed). thread.created
   * says which happened. Safe to re-send after a dropped connection.
   * @returns {Promise<Thread>}
   */
  async thread(threadKey, options = {}) {
    if (typeof threadKey !== 'string' || threadKey.trim() === '') {
      throw invalidArgument('thread() needs an application key, e.g. an order id (for a thread id use threadById(id))');
    }
    const key = threadKey.trim();
    if (utf8.encode(key).length > MAX_THREAD_KEY_BYTES) throw invalidArgument(`threadKey is longer than ${MAX_THREAD_KEY_BYTES} bytes (UTF-8)`);
    if (options === null || typeof options !== 'object' || Array.isArray(options)) throw invalidArgument('thread() options must be an object');
    const unknown = Object.keys(options).filter((k) => !THREAD_OPTIONS.includes(k));
    if (unknown.length > 0) throw invalidArgument(`unknown thread() options: ${unknown.join(', ')} (known: ${THREAD_OPTIONS.join(', ')})`);
    for (const f of ['label', 'contract', 'role', 'serviceName']) {
      if (options[f] !== undefined && (typeof options[f] !== 'string' || options[f].trim() === '')) {
        throw invalidArgument(`${f} must be a non-empty string`);
      }
    }
    const serviceName = options.serviceName ?? this.serviceName;
    const msg = { action: 'thread', threadKey: key, serviceName };
    if (options.label !== undefined) msg.label = options.label;
    if (options.contract !== undefined) msg.contractName = options.contract;
    if (options.role !== undefined) {
      msg.role = options.role;
    } else if (options.contract !== undefined) {
      msg.role = serviceName ? serviceName.replace(/-service$/, '') : 'participant';
    }
    if (options.refs !== undefined) msg.refs = stringMap(options.refs, 'refs');
    if (options.tags !== undefined) {
      if (!Array.isArray(options.tags) || options.tags.some((t) => typeof t !== 'string' || t.trim() === '')) {
        throw invalidArgument('tags must be an array of non-empty strings');
      }
      msg.tags = options.tags;
    }
    const r = await this._request(msg);
    if (typeof r.threadId !== 'string' || r.threadId === '' || r.threadKey !== key) {
      throw new ThreadengineError(ErrorCode.ENGINE_ERROR, `the engine answered thread(${JSON.stringify(key)}) with another thread identity`,
        { action: 'thread', reply: r });
    }
    // Re-sent after a reconnect: the new session then acts on it (and hears
    // its notifications) as this one did.
    this.#keyed.set(r.threadId, msg.role ? { threadKey: key, role: msg.role } : { threadKey: key });
    return new Thread(this, {
      threadId: r.threadId, threadKey: key, label: r.label ?? null, tags: r.tags ?? [], refs: r.refs ?? {},
      contractId: r.contractId ?? null, contractName: r.contractName ?? null, contractVersion: r.contractVersion ?? null,
      role: msg.role ?? null, created: r.created === true,
    });
  }

  /**
   * A Thread handle for a thread id, to record steps on a thread started
   * elsewhere (the engine checks access on every write). Nothing is sent.
   */
  threadById(threadId) {
    if (typeof threadId !== 'string' || threadId === '') throw invalidArgument('threadById() needs a thread id');
    return new Thread(this, { threadId });
  }

  // ---- notifications -------------------------------------------------------------

  /**
   * Subscribes a handler to one push type (or a wildcard), typed by it.
   * subscribe(event, stepName, handler) for step and rule events of one step
   * (stepName may be "contract@step"); subscribe(event, handler) for thread
   * events (thread.completed, thread.cancelled, thread.failed) and for
   * thread-level rule.violated alerts (a step overdue, a silent thread).
   * event is one of EVENTS. Resolves when the engine confirmed the
   * subscription; the subscription is restored after every reconnect.
   * @returns {Promise<{ event: string, stepName: string, unsubscribe(): Promise<void> }>}
   */
  subscribe(event, stepNameOrHandler, handler) {
    return this._subscribe(event, stepNameOrHandler, handler, null);
  }

  /** subscribe(), for the notifications of one thread only. @internal */
  async _subscribe(event, stepNameOrHandler, handler, threadId) {
    let stepName = stepNameOrHandler;
    if (typeof stepNameOrHandler === 'function') {
      handler = stepNameOrHandler;
      stepName = undefined;
    }
    if (!EVENTS.includes(event)) throw invalidArgument(`unknown event ${JSON.stringify(event)}; expected one of ${EVENTS.join(', ')}`);
    if (typeof handler !== 'function') throw invalidArgument('subscribe() needs a handler function');
    let key;
    if (event.startsWith('thread.')) {
      if (stepName !== undefined && stepName !== 'global') throw invalidArgument('thread events are not per step: subscribe(event, handler)');
      key = 'global';
    } else if (stepName === undefined) {
      if (event.startsWith('step.')) {
        throw invalidArgument(`${event} needs a step name: subscribe(${JSON.stringify(event)}, "step_name", handler)`);
      }
      key = 'global'; // rule.* and * without a step: thread-level alerts (and, for *, thread events)
    } else {
      if (typeof stepName !== 'string' || stepName === '') {
        throw invalidArgument(`${event} needs a step name: subscribe(${JSON.stringify(event)}, "step_name", handler)`);
      }
      key = stepName;
    }
    const sub = { event, key, handler, threadId };
    this.#subs.push(sub);
    try {
      await this.#sendSubscription(key);
    } catch (err) {
      this.#subs = this.#subs.filter((s) => s !== sub);
      throw err;
    }
    return {
      event,
      stepName: key,
      unsubscribe: async () => {
        if (!this.#subs.includes(sub)) return;
        this.#subs = this.#subs.filter((s) => s !== sub);
        if (this.#subs.some((s) => s.key === key)) {
          await this.#sendSubscription(key);
        } else if (this.#state === 'open' || this.#state === 'reconnecting') {
          await this._request({ action: 'unsubscribe', stepName: key });
        }
      },
    };
  }

  /**
   * Removes handlers: unsubscribe(stepName) every handler of a step name
   * ("global" for thread events), unsubscribe(event, stepName) those of one
   * event on it (the Threadify SDKs' form).
   */
  async unsubscribe(eventOrStepName, stepName) {
    let event = null;
    if (stepName !== undefined) {
      event = eventOrStepName;
      if (!EVENTS.includes(event)) throw invalidArgument(`unknown event ${JSON.stringify(event)}; expected one of ${EVENTS.join(', ')}`);
    } else {
      stepName = eventOrStepName;
    }
    if (typeof stepName !== 'string' || stepName === '') throw invalidArgument('unsubscribe() needs a step name');
    this.#subs = this.#subs.filter((s) => s.key !== stepName || (event !== null && s.event !== event));
    if (this.#subs.some((s) => s.key === stepName)) {
      await this.#sendSubscription(stepName);
    } else {
      await this._request({ action: 'unsubscribe', stepName });
    }
  }

  /**
   * The event types to ask the engine for, per routing key. The engine does
   * not accept "thread.failed" by name (it pushes it to thread.* and "*"
   * subscriptions), so it is asked for as thread.*; handlers still hear only
   * their own event.
   */
  #subscriptionSets() {
    const sets = new Map();
    for (const s of this.#subs) {
      if (!sets.has(s.key)) sets.set(s.key, new Set());
      sets.get(s.key).add(s.event === 'thread.failed' ? 'thread.*' : s.event);
    }
    return [...sets].map(([k, v]) => [k, [...v]]);
  }

  #sendSubscription(key) {
    const set = this.#subscriptionSets().find(([k]) => k === key);
    return this._request({ action: 'subscribe', stepName: key, eventTypes: set ? set[1] : [] });
  }

  #onNotification(data, ackToken) {
    if (data === null || typeof data !== 'object') return;
    const n = new Notification(data, ackToken, (x) => this.#ack(x));
    if (n.notificationId && this.#seen.has(n.notificationId)) {
      n.ack(); // a redelivery of one already handled: its earlier ack crossed it
      return;
    }
    const handlers = this.#subs.filter((s) => eventMatches(s.event, n.event) &&
      (s.threadId === null || s.threadId === n.threadId) &&
      (s.key === n.stepName || (n.contractName && s.key === `${n.contractName}@${n.stepName}`) ||
        (s.key === 'global' && n.event.startsWith('thread.'))));
    if (handlers.length === 0) {
      n.ack(); // routed here for a step this connection watches, but not an event it asked for
      return;
    }
    for (const { handler } of handlers) {
      try {
        const r = handler(n);
        if (r && typeof r.then === 'function') r.then(undefined, (err) => this.#emit('error', err));
      } catch (err) {
        this.#emit('error', err);
      }
    }
  }

  #ack(n) {
    if (n.notificationId) {
      this.#seen.add(n.notificationId);
      if (this.#seen.size > SEEN_NOTIFICATIONS) this.#seen.delete(this.#seen.values().next().value);
    }
    if (!n.ackToken) return;
    this.#sendUntracked({ action: 'ack_notification', notification_id: n.notificationId, thread_id: n.threadId,
      ackToken: n.ackToken, processed: true });
  }

  // ---- reading (GraphQL) -------------------------------------------------------------

  /** @returns {Promise<import('./reader.js').ThreadView>} rejects with not_found when the thread does not exist or is not visible */
  getThread(threadId) { return this.reader.getThread(threadId); }
  getThreadByRef(filter) { return this.reader.getThreadByRef(filter); }
  getThreadsByRef(filter) { return this.reader.threadsByRef(filter).then((c) => c.threads); }
  threadsByRef(filter) { return this.reader.threadsByRef(filter); }
  threads(filter) { return this.reader.threads(filter); }
  getThreadChain(rootId, maxDepth) { return this.reader.threadChain(rootId, maxDepth); }
  threadChain(rootId, maxDepth) { return this.reader.threadChain(rootId, maxDepth); }
  getValidationResults(threadId, options) { return this.reader.validationResults(threadId, options); }
  validationResults(threadId, options) { return this.reader.validationResults(threadId, options); }
  verifyIntegrity(threadId) { return this.reader.verifyIntegrity(threadId); }
  /** The thread with every step's attempts and its validation results (ThreadView.getCompleteData). */
  getCompleteData(threadId, options) { return this.reader.completeData(threadId, options); }
  stepHistory(filter) { return this.reader.stepHistory(filter); }
  /** Any GraphQL query; resolves with { data, extensions } (extensions.cost is the query's cost). */
  query(query, variables) { return this.reader.client.request(query, variables); }
}

function closeQuietly(ws) {
  try { ws.close(); } catch { /* already closed */ }
}

function terminate(ws) {
  if (typeof ws.terminate === 'function') ws.terminate();
  else closeQuietly(ws);
}
