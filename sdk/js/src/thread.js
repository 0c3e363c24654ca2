import { invalidArgument, ValidationViolatedError, WaitTimeoutError, WaitCancelledError } from './errors.js';
import { idempotencyKey as autoKey } from './idempotency.js';
import { randomId } from './transport.js';
import { stringMap } from './values.js';
import {
  PermissionGrant, sendWait, waitTimeout, checkInvocationId, checkPermission, checkValidation, waitResult,
} from './waits.js';

const ACCESS_LEVELS = ['external', 'observer', 'participant'];

/** @internal */
export function threadFromReply(conn, reply, known) {
  return new Thread(conn, {
    threadId: reply.threadId,
    contractId: reply.contractId || null,
    contractName: reply.contractName || null,
    contractVersion: reply.contractVersion ?? null,
    role: known.role ?? reply.role ?? null,
    accessLevel: known.accessLevel ?? reply.accessLevel ?? null,
    refs: known.refs ?? reply.refs ?? {},
  });
}

/** A thread this connection writes to. */
export class Thread {
  #conn;
  /** stepName → the PermissionGrant its next report carries. */
  #grants = new Map();

  /** @internal use connection.start(), join() or thread() */
  constructor(conn, fields) {
    this.#conn = conn;
    this.threadId = fields.threadId;
    this.contractId = fields.contractId ?? null;
    this.contractName = fields.contractName ?? null;
    this.contractVersion = fields.contractVersion ?? null;
    this.role = fields.role ?? null;
    this.accessLevel = fields.accessLevel ?? null;
    this.refs = fields.refs ?? {};
    /** The application key of a thread from connection.thread(key), else null. */
    this.threadKey = fields.threadKey ?? null;
    this.label = fields.label ?? null;
    this.tags = fields.tags ?? [];
    /** From connection.thread(key): true when that call created the thread, false when it resumed it. */
    this.created = fields.created ?? null;
  }

  get id() { return this.threadId; }

  /**
   * May this caller record stepName now? Asks the engine's `can` (GraphQL): read-only, never a grant —
   * a later report or waitFor is judged again. Resolves with { allowed, status (allowed, denied,
   * requires_claim, uncertain), reason, requiredSteps, satisfiedSteps, missingSteps, previousStep,
   * matchedBy, violations }. context, when given, is judged as the step's context would be (content
   * rules, references, semantic rules). stepName may also be { action } or { goal } (words the
   * engine's classifier matches to one step).
   *
   * @param {string | { action?: string, goal?: string }} stepName
   * @param {Record<string, string | number | boolean>} [context]
   */
  can(stepName, context) { return this.#conn.reader.can(this.threadId, stepName, context); }

  /**
   * Advice on a step: { eligible, recommendation (yes, no, uncertain, unavailable), reason }. Never a
   * permission; unavailable when the engine has no classifier.
   *
   * @param {string | { action?: string, goal?: string }} stepName
   */
  should(stepName) { return this.#conn.reader.should(this.threadId, stepName); }

  /** The paths of up to 4 steps open from now: { threadId, paths: [{ actions, status, reason }] }. */
  next() { return this.#conn.reader.next(this.threadId); }

  /**
   * Waits until the contract lets this connection run one invocation of
   * stepName now (its party owns the step, the steps recorded so far make it
   * a valid entry point or transition, the thread is open), and resolves
   * with a PermissionGrant; the thread's next report of stepName carries its
   * invocationId. Rejects with PermissionDeniedError (decision denied),
   * WaitTimeoutError (timed_out, or no answer), WaitCancelledError (the
   * signal fired; the SDK sends cancelWait) or WaitUnsupportedError.
   * Free-form threads allow every step at once.
   *
   * @param {string} stepName
   * @param {{ timeout?: number, signal?: AbortSignal, invocationId?: string }} [options]
   *   timeout in milliseconds (default 10000, at most 300000); invocationId
   *   defaults to a new UUID (asking again with the same one is answered
   *   allowed again without consuming anything more)
   * @returns {Promise<PermissionGrant>}
   */
  async waitFor(stepName, options = {}) {
    if (typeof stepName !== 'string' || stepName.trim() === '') throw invalidArgument('waitFor() needs a step name');
    const timeoutMs = waitTimeout(options.timeout);
    const invocationId = checkInvocationId(options.invocationId ?? randomId());
    const reply = await sendWait(this.#conn,
      { action: 'waitFor', threadId: this.threadId, stepName, invocationId, await: true },
      { timeoutMs, signal: options.signal, what: `permission to run ${stepName}`, extra: { invocationId, stepName } });
    const grant = new PermissionGrant(this.#conn, this, { ...checkPermission(reply, invocationId, stepName), stepName });
    this.#grants.set(stepName, grant);
    return grant;
  }

  /**
   * Waits for the contract's verdict on one recorded attempt (its stepId, as
   * a step result or a notification gives it), waiting until it is recorded.
   * Resolves with the answer when it passed (warnings in `violations`);
   * rejects with ValidationViolatedError, ValidationUnavailableError (a
   * free-form thread: decision unvalidated), WaitTimeoutError or
   * WaitCancelledError.
   * @param {string} stepName
   * @param {string} stepId
   * @param {{ timeout?: number, signal?: AbortSignal }} [options]
   */
  async waitForValidation(stepName, stepId, options = {}) {
    if (typeof stepName !== 'string' || stepName.trim() === '') throw invalidArgument('waitForValidation() needs a step name');
    if (typeof stepId !== 'string' || stepId.trim() === '') throw invalidArgument('waitForValidation() needs a step id');
    const timeoutMs = waitTimeout(options.timeout);
    const reply = await sendWait(this.#conn,
      { action: 'waitFor', threadId: this.threadId, stepName, stepId, await: true },
      { timeoutMs, signal: options.signal, what: `the validation of ${stepName}`, extra: { stepId, stepName } });
    return checkValidation(reply, stepId, stepName);
  }

  /**
   * Handlers for this thread's notifications only: on(event, stepName,
   * handler) for step and rule events, on(event, handler) for thread events
   * and thread-level alerts. Resolves with a subscription (unsubscribe()).
   */
  on(event, stepNameOrHandler, handler) {
    return this.#conn._subscribe(event, stepNameOrHandler, handler, this.threadId);
  }

  /**
   * Resolves with the next notification of stepName on this thread (a
   * step.success or step.failed push, acknowledged), optionally only one
   * whose stepStatus is in statuses — the Go and Python SDKs' WaitFor. It
   * subscribes the connection to the step itself (no subscribe() needed)
   * and unsubscribes when done. Rejects with WaitTimeoutError after timeout
   * ms (default 10000) or WaitCancelledError when signal fires.
   * @param {string} stepName
   * @param {{ statuses?: string[], timeout?: number, signal?: AbortSignal }} [options]
   */
  waitForStep(stepName, options = {}) {
    if (typeof stepName !== 'string' || stepName.trim() === '') throw invalidArgument('waitForStep() needs a step name');
    const timeoutMs = waitTimeout(options.timeout);
    const statuses = options.statuses ?? null;
    if (statuses !== null && (!Array.isArray(statuses) || statuses.some((x) => typeof x !== 'string'))) {
      throw invalidArgument('statuses must be an array of step statuses, e.g. ["success"]');
    }
    const { signal } = options;
    if (signal !== undefined && signal !== null && typeof signal.addEventListener !== 'function') {
      throw invalidArgument('signal must be an AbortSignal');
    }
    return new Promise((resolve, reject) => {
      let sub = null;
      let done = false;
      const finish = (err, n) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        sub?.unsubscribe().catch(() => {});
        if (err) reject(err); else resolve(n);
      };
      const timer = setTimeout(() => finish(new WaitTimeoutError(`no notification of ${stepName} on thread ${this.threadId} within ${timeoutMs} ms`,
        { decision: 'timed_out', stepName })), timeoutMs);
      const onAbort = () => finish(new WaitCancelledError(`the wait for ${stepName} was aborted`,
        { decision: 'cancelled', stepName, cause: signal.reason }));
      if (signal?.aborted) { onAbort(); return; }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#conn._subscribe('step.*', stepName, (n) => {
        n.ack();
        if (statuses === null || statuses.includes(n.stepStatus)) finish(null, n);
      }, this.threadId).then((s) => {
        sub = s;
        if (done) s.unsubscribe().catch(() => {});
      }, (err) => finish(err));
    });
  }

  /** The grant the next report of stepName carries, if any. @internal */
  _grant(stepName) { return this.#grants.get(stepName) ?? null; }

  /** @internal */
  _dropGrant(grant) {
    if (this.#grants.get(grant.stepName) === grant) this.#grants.delete(grant.stepName);
  }

  /** Begins a step; nothing is sent until success(), failed(), error() or stop(). */
  step(stepName, options) {
    if (typeof stepName !== 'string' || stepName.trim() === '') throw invalidArgument('step name must be a non-empty string');
    const serviceName = typeof options === 'string' ? options : options?.serviceName;
    return new Step(this.#conn, this, stepName, serviceName ?? this.#conn.serviceName);
  }

  /** Adds or replaces references (string values), e.g. { trackingId: 'TR-1' }. */
  async addRefs(refs) {
    const r = stringMap(refs, 'refs');
    if (Object.keys(r).length === 0) throw invalidArgument('addRefs() needs at least one ref');
    await this.#conn._request({ action: 'addRefs', threadId: this.threadId, refs: r });
    Object.assign(this.refs, r);
  }

  /** Links another thread (ref linkedThread:<relationship>), which threadChain follows. */
  async linkThread(threadId, relationship = 'parent') {
    if (typeof threadId !== 'string' || threadId === '') throw invalidArgument('linkThread() needs a thread id');
    if (typeof relationship !== 'string' || relationship === '') throw invalidArgument('relationship must be a non-empty string');
    await this.addRefs({ [`linkedThread:${relationship}`]: threadId });
  }

  /**
   * Creates an invitation token another party passes to connection.join().
   * @returns {Promise<{ threadToken: string, threadId: string, role: string, accessLevel: string, expiresAt: Date }>}
   */
  async inviteParty({ role, accessLevel = 'external', expiresIn = '24h' } = {}) {
    if (typeof role !== 'string' || role === '') throw invalidArgument('inviteParty() needs a role');
    if (!ACCESS_LEVELS.includes(accessLevel)) throw invalidArgument(`accessLevel must be one of ${ACCESS_LEVELS.join(', ')}`);
    if (typeof expiresIn !== 'string' || !/^\d+[mhd]$/.test(expiresIn)) throw invalidArgument('expiresIn must look like 30m, 24h or 7d');
    const r = await this.#conn._request({ action: 'inviteParty', threadId: this.threadId, role, accessLevel, expiresIn });
    return { threadToken: r.threadToken, threadId: r.threadId ?? this.threadId, role: r.role, accessLevel: r.accessLevel,
      // RFC 3339 from this engine; Unix seconds from older ones.
      expiresAt: new Date(typeof r.expiresAt === 'number' ? r.expiresAt * 1000 : r.expiresAt) };
  }

  /** Completes the thread (contract threads complete by their terminal step instead). */
  complete(reason = '') { return this.#end('completed', reason); }

  /** Cancels the thread. */
  cancel(reason = '') { return this.#end('cancelled', reason); }

  async #end(status, reason) {
    const msg = { action: 'threadEnd', threadId: this.threadId, status };
    if (typeof reason === 'string') {
      if (reason) msg.reason = reason;
    } else if (reason && typeof reason === 'object') {
      Object.assign(msg, reason, { action: 'threadEnd', threadId: this.threadId, status });
    } else {
      throw invalidArgument('reason must be a string or an object');
    }
    const r = await this.#conn._request(msg);
    return { threadId: r.threadId ?? this.threadId, status: r.threadStatus, endedAt: r.closedAt || r.completedAt || r.cancelledAt || null,
      message: r.message };
  }
}

/**
 * One step being recorded. Build it, then finish it once with success(),
 * failed(), error() or stop(); to retry, begin the step again with the same
 * context (same automatic idempotency key) and finish it again.
 */
export class Step {
  #conn;
  #thread;
  #context = {};
  #subSteps = [];
  #key = null;
  #recorded = false;
  // One attempt's identity, kept if finishing is tried again after an error:
  // when a reply is lost (dropped connection, timeout), the engine recognises
  // the re-sent frame as this same attempt instead of counting a retry. Set
  // when the step is first sent: the one given, else the invocation of a
  // grant from thread.waitFor(), else a new UUID.
  #invocationId = null;
  #grant = null;

  /** @internal */
  constructor(conn, thread, stepName, serviceName) {
    this.#conn = conn;
    this.#thread = thread;
    this.stepName = stepName;
    this.serviceName = serviceName ?? null;
    this.startedAt = new Date().toISOString();
  }

  /** Sets the idempotency key instead of the automatic one. */
  idempotencyKey(key) {
    if (typeof key !== 'string' || key.trim() === '') throw invalidArgument('idempotency key must be a non-empty string');
    this.#key = key;
    return this;
  }

  /** Adds business context (values become strings). isPrivate also stores each as private_<key>. */
  addContext(data, isPrivate = false) {
    const m = stringMap(data, 'context');
    for (const [k, v] of Object.entries(m)) {
      this.#context[k] = v;
      if (isPrivate) this.#context[`private_${k}`] = v;
    }
    return this;
  }

  /** Records a sub-step (status success or failed) sent with the step. */
  subStep(name, payload = {}, status = 'success') {
    if (typeof name !== 'string' || name.trim() === '') throw invalidArgument('sub-step name must be a non-empty string');
    if (status !== 'success' && status !== 'failed') throw invalidArgument('sub-step status must be "success" or "failed"');
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw invalidArgument('sub-step payload must be an object');
    this.#subSteps.push({ name, status, payload, recordedAt: new Date().toISOString() });
    return this;
  }

  /**
   * Names this attempt's invocation (≤ 128 characters) instead of the
   * grant's (thread.waitFor) or a new UUID: a report re-sent with the same
   * id is recognised by the engine as this attempt.
   */
  invocationId(id) {
    if (this.#recorded || this.#invocationId !== null) throw invalidArgument('the invocation id is set before the step is sent');
    this.#invocationId = checkInvocationId(id);
    return this;
  }

  get context() { return { ...this.#context }; }

  /** The key this step is recorded under: the one set, else the automatic one. */
  get key() { return this.#key ?? autoKey(this.stepName, this.#context); }

  success(messageOrData, options) { return this.stop('success', messageOrData, options); }
  failed(messageOrData, options) { return this.stop('failed', messageOrData, options); }
  error(messageOrData, options) { return this.stop('error', messageOrData, options); }

  /**
   * Sends the step with a final status. A string becomes
   * threadify_metadata.message; an object is the metadata (its `error` field
   * is what step history shows for a failure).
   *
   * options.waitFor: true asks the engine for the contract's verdict in the
   * reply (result.verdict); a violated verdict rejects with
   * ValidationViolatedError (the step is recorded: err.step is this result,
   * err.result the verdict), a
   * free-form thread with ValidationUnavailableError. A duplicate report
   * gets the verdict of the attempt already recorded.
   * @returns {Promise<import('../index.js').StepResult>}
   */
  async stop(status = 'success', messageOrData, options = {}) {
    if (this.#recorded) {
      throw invalidArgument(`step ${this.stepName} was already recorded; begin it again with thread.step() to retry`);
    }
    if (typeof status !== 'string' || status === '') throw invalidArgument('status must be a non-empty string');
    if (options === null || typeof options !== 'object') throw invalidArgument('step options must be an object, e.g. { waitFor: true }');
    const waitFor = options.waitFor === true;
    if (this.#invocationId === null) {
      this.#grant = this.#thread._grant(this.stepName);
      this.#invocationId = this.#grant?.invocationId ?? randomId();
    }
    const msg = {
      action: 'recordThreadEvent',
      threadId: this.#thread.threadId,
      stepName: this.stepName,
      startedAt: this.startedAt,
      finishedAt: new Date().toISOString(),
      context: { ...this.#context },
      status,
      serviceName: this.serviceName,
      idempotencyKey: this.key,
      invocationId: this.#invocationId,
    };
    if (typeof messageOrData === 'string') {
      if (messageOrData) msg.threadify_metadata = { message: messageOrData };
    } else if (messageOrData !== undefined && messageOrData !== null) {
      if (typeof messageOrData !== 'object' || Array.isArray(messageOrData)) throw invalidArgument('the step message must be a string or an object');
      msg.threadify_metadata = messageOrData;
    }
    if (this.#subSteps.length > 0) msg.subSteps = this.#subSteps;
    if (waitFor) msg.waitFor = true;
    this.#recorded = true;
    let r;
    try {
      r = await this.#conn._request(msg);
    } catch (err) {
      if (err.reply && this.#grant) this.#thread._dropGrant(this.#grant); // the engine judged the grant's report
      this.#recorded = false; // not recorded: finishing it again is allowed
      throw err;
    }
    if (this.#grant) this.#thread._dropGrant(this.#grant);
    const result = {
      threadId: r.threadId ?? this.#thread.threadId,
      stepId: r.stepId ?? null,
      stepName: this.stepName,
      idempotencyKey: r.idempotencyKey ?? msg.idempotencyKey,
      status,
      retryCount: r.retryCount ?? 0,
      attempt: r.attempt ?? 1,
      duplicate: r.isDuplicate === true,
      threadStatus: r.threadStatus ?? null,
      invocationId: this.#invocationId,
      validation: waitFor ? null : r.validation ?? null,
      verdict: null,
    };
    if (!waitFor) return result;
    // The verdict: in the reply, or — for a duplicate, whose reply has none —
    // that of the attempt already recorded.
    let v = r.validation;
    if (!v && result.stepId) {
      v = await this.#thread.waitForValidation(this.stepName, result.stepId).catch((err) => {
        if (err.result) return { ...err.result, stepId: result.stepId };
        throw err;
      });
    }
    result.verdict = waitResult({ ...v, stepId: v?.stepId ?? result.stepId, stepName: this.stepName, threadId: result.threadId });
    try {
      checkValidation({ ...result.verdict }, result.stepId, this.stepName);
    } catch (err) {
      err.step = result;
      if (err instanceof ValidationViolatedError) {
        err.message = `${this.stepName} was recorded (step ${result.stepId}) but violated its contract: ${err.message}`;
      }
      throw err;
    }
    return result;
  }
}
