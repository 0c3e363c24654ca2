import {
  invalidArgument, PermissionDeniedError, ValidationViolatedError, ValidationUnavailableError,
  WaitTimeoutError, WaitCancelledError, WaitUnsupportedError, InvalidWaitResponseError,
} from './errors.js';

/** The engine waits at most this long (its timeoutMs bound). */
export const MAX_WAIT_MS = 300_000;
export const DEFAULT_WAIT_MS = 10_000;
/** invocationId bound of the engine (characters). */
const MAX_INVOCATION_ID = 128;
/**
 * The engine answers timed_out a little before timeoutMs; the SDK gives up
 * on its own (and sends cancelWait) only this long after it, so a slow
 * network does not turn the engine's answer into a client timeout.
 */
const GRACE_MS = 2_000;

/** What every wait answer says. */
export const Decision = Object.freeze({
  ALLOWED: 'allowed',
  DENIED: 'denied',
  PASSED: 'passed',
  VIOLATED: 'violated',
  UNVALIDATED: 'unvalidated',
  TIMED_OUT: 'timed_out',
  CANCELLED: 'cancelled',
  PENDING: 'pending',
});

/** @returns {number} a wait's timeout in milliseconds, checked */
export function waitTimeout(timeout) {
  const t = timeout ?? DEFAULT_WAIT_MS;
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0 || t > MAX_WAIT_MS) {
    throw invalidArgument(`timeout must be a number of milliseconds above 0 and at most ${MAX_WAIT_MS}`);
  }
  return Math.ceil(t);
}

export function checkInvocationId(id) {
  if (typeof id !== 'string' || id.trim() === '' || [...id].length > MAX_INVOCATION_ID) {
    throw invalidArgument(`invocationId must be a non-empty string of at most ${MAX_INVOCATION_ID} characters`);
  }
  return id;
}

/** The answer of a wait, as the SDK returns it. */
export function waitResult(reply) {
  return {
    decision: reply.decision ?? null,
    threadId: reply.threadId ?? null,
    stepName: reply.stepName ?? null,
    stepId: reply.stepId ?? null,
    invocationId: reply.invocationId ?? null,
    message: reply.message ?? '',
    violations: Array.isArray(reply.violations) ? reply.violations : [],
    code: reply.code ?? null,
  };
}

/**
 * Sends a blocking wait frame through the connection: the frame carries the
 * time left (so a wait re-issued after a reconnect keeps its deadline), the
 * SDK gives up GRACE_MS after the deadline, and a timeout or an abort sends
 * cancelWait for it. Resolves with the raw reply.
 */
export function sendWait(conn, msg, { timeoutMs, signal, what, extra }) {
  if (signal !== undefined && signal !== null && typeof signal.addEventListener !== 'function') {
    throw invalidArgument('signal must be an AbortSignal');
  }
  const deadline = Date.now() + timeoutMs;
  return conn._request(msg, {
    replayable: true,
    deadlineMs: timeoutMs + GRACE_MS,
    prepare: () => {
      const left = Math.ceil(deadline - Date.now());
      if (left <= 0) return new WaitTimeoutError(`no decision on ${what} within ${timeoutMs} ms`, { decision: Decision.TIMED_OUT, ...extra });
      return { ...msg, timeoutMs: left };
    },
    cancelFrame: (requestId) => ({ action: 'cancelWait', targetRequestId: requestId }),
    timeoutError: () => new WaitTimeoutError(`no answer about ${what} within ${timeoutMs} ms; the wait was cancelled`,
      { decision: Decision.TIMED_OUT, ...extra }),
    signal: signal ?? undefined,
    abortError: () => new WaitCancelledError(`the wait for ${what} was aborted; the wait was cancelled`,
      { decision: Decision.CANCELLED, cause: signal?.reason, ...extra }),
  });
}

/** Throws for the answers every wait shares: undecided, timed out, cancelled. */
function checkDecided(reply, what, extra) {
  const r = waitResult(reply);
  if (!r.decision || r.decision === Decision.PENDING) {
    throw new WaitUnsupportedError(`the engine gave no final decision on ${what}`, { decision: r.decision, result: r, ...extra });
  }
  if (r.decision === Decision.TIMED_OUT) {
    throw new WaitTimeoutError(r.message || `no decision on ${what} in time`, { decision: r.decision, result: r, ...extra });
  }
  if (r.decision === Decision.CANCELLED) {
    throw new WaitCancelledError(r.message || `the wait for ${what} was cancelled`, { decision: r.decision, result: r, ...extra });
  }
  return r;
}

/** A permission answer: allowed for this very invocation, else an error. */
export function checkPermission(reply, invocationId, stepName) {
  const what = `permission to run ${stepName}`;
  const extra = { invocationId, stepName };
  const r = checkDecided(reply, what, extra);
  if (r.decision !== Decision.ALLOWED) {
    throw new PermissionDeniedError(r.message || `${what} was denied`,
      { decision: r.decision, result: r, violations: r.violations, engineCode: r.code ?? undefined, ...extra });
  }
  if (r.invocationId !== invocationId) {
    throw new InvalidWaitResponseError(`the engine allowed invocation ${r.invocationId}, not ${invocationId}`, { result: r, ...extra });
  }
  return r;
}

/** A validation answer: passed for this very step attempt, else an error. */
export function checkValidation(reply, stepId, stepName) {
  const what = `the validation of ${stepName} (step ${stepId})`;
  const extra = { stepId, stepName };
  const r = checkDecided(reply, what, extra);
  if (r.stepId !== stepId) {
    throw new InvalidWaitResponseError(`the engine answered about step ${r.stepId}, not ${stepId}`, { result: r, ...extra });
  }
  if (r.decision === Decision.VIOLATED) {
    throw new ValidationViolatedError(r.message || `${stepName} violated its contract`,
      { decision: r.decision, result: r, violations: r.violations, ...extra });
  }
  if (r.decision !== Decision.PASSED) {
    throw new ValidationUnavailableError(r.message || `no validation of ${stepName}`,
      { decision: r.decision, result: r, ...extra });
  }
  return r;
}

/**
 * Permission to run one invocation of a step, from thread.waitFor(). The
 * thread's next report of that step carries its invocationId; cancel() gives
 * the permission back (a report carrying it is then refused).
 */
export class PermissionGrant {
  #thread;
  #conn;

  /** @internal */
  constructor(conn, thread, r) {
    this.#conn = conn;
    this.#thread = thread;
    this.decision = r.decision;
    this.threadId = r.threadId ?? thread.threadId;
    this.stepName = r.stepName;
    this.invocationId = r.invocationId;
    this.message = r.message;
    this.violations = r.violations;
  }

  /**
   * Gives the permission back: resolves with the engine's answer (decision
   * "cancelled"). What the grant consumed (a predecessor's success) is not
   * restored.
   */
  async cancel() {
    const reply = await this.#conn._request({ action: 'waitFor', threadId: this.threadId, stepName: this.stepName,
      invocationId: this.invocationId, cancel: true });
    const r = waitResult(reply);
    const extra = { invocationId: this.invocationId, stepName: this.stepName, result: r };
    if (r.decision !== Decision.CANCELLED) {
      throw new PermissionDeniedError(r.message || `the engine did not cancel invocation ${this.invocationId}`,
        { decision: r.decision, ...extra });
    }
    if (r.invocationId !== this.invocationId) {
      throw new InvalidWaitResponseError(`the engine cancelled invocation ${r.invocationId}, not ${this.invocationId}`, extra);
    }
    this.#thread._dropGrant(this);
    return r;
  }

  toJSON() {
    return { decision: this.decision, threadId: this.threadId, stepName: this.stepName, invocationId: this.invocationId,
      message: this.message, violations: this.violations };
  }
}
