import { invalidArgument } from './errors.js';
import { idempotencyKey as autoKey } from './idempotency.js';
import { randomId } from './transport.js';
import { stringMap } from './values.js';

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
  }

  get id() { return this.threadId; }

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
  // the re-sent frame as this same attempt instead of counting a retry.
  #invocationId = randomId();

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

  get context() { return { ...this.#context }; }

  /** The key this step is recorded under: the one set, else the automatic one. */
  get key() { return this.#key ?? autoKey(this.stepName, this.#context); }

  success(messageOrData) { return this.stop('success', messageOrData); }
  failed(messageOrData) { return this.stop('failed', messageOrData); }
  error(messageOrData) { return this.stop('error', messageOrData); }

  /**
   * Sends the step with a final status. A string becomes
   * threadify_metadata.message; an object is the metadata (its `error` field
   * is what step history shows for a failure).
   * @returns {Promise<import('../index.js').StepResult>}
   */
  async stop(status = 'success', messageOrData) {
    if (this.#recorded) {
      throw invalidArgument(`step ${this.stepName} was already recorded; begin it again with thread.step() to retry`);
    }
    if (typeof status !== 'string' || status === '') throw invalidArgument('status must be a non-empty string');
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
    this.#recorded = true;
    let r;
    try {
      r = await this.#conn._request(msg);
    } catch (err) {
      this.#recorded = false; // not recorded: finishing it again is allowed
      throw err;
    }
    return {
      threadId: r.threadId ?? this.#thread.threadId,
      stepId: r.stepId ?? null,
      stepName: this.stepName,
      idempotencyKey: r.idempotencyKey ?? msg.idempotencyKey,
      status,
      retryCount: r.retryCount ?? 0,
      attempt: r.attempt ?? 1,
      duplicate: r.isDuplicate === true,
      threadStatus: r.threadStatus ?? null,
      validation: r.validation ?? null,
    };
  }
}
