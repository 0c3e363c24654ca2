/**
 * The engine's notificationType (either vocabulary: the engine speaks
 * execution.* / validation.* to most sessions and step.* / rule.* to those
 * that subscribed with those names) → the event handlers subscribe to.
 */
const EVENT_OF_TYPE = {
  'execution.success': 'step.success',
  'execution.failed': 'step.failed',
  'validation.passed': 'rule.passed',
  'validation.violated': 'rule.violated',
  'step.success': 'step.success',
  'step.failed': 'step.failed',
  'rule.passed': 'rule.passed',
  'rule.violated': 'rule.violated',
  'thread.completed': 'thread.completed',
  'thread.cancelled': 'thread.cancelled',
  'thread.failed': 'thread.failed',
};

/** Every event the engine pushes, one typed handler each. */
export const PUSH_EVENTS = Object.freeze([
  'step.success', 'step.failed', 'rule.passed', 'rule.violated', 'thread.completed', 'thread.cancelled', 'thread.failed',
]);

/** Every event name subscribe() accepts, wildcards included. */
export const EVENTS = Object.freeze([
  'step.success', 'step.failed', 'step.*',
  'rule.passed', 'rule.violated', 'rule.*',
  'thread.completed', 'thread.cancelled', 'thread.failed', 'thread.*',
  '*',
]);

/**
 * Routes by what the engine says happened (notificationType, else source and
 * status); the Threadify Node SDK 0.1.x ignored both and delivered every
 * notification as step.success. A type this SDK does not know yet keeps its
 * name (in the step/rule vocabulary), so wildcard handlers still hear it.
 */
export function eventOf(n) {
  const t = typeof n.notificationType === 'string' ? n.notificationType : '';
  if (EVENT_OF_TYPE[t]) return EVENT_OF_TYPE[t];
  if (/^[a-z_]+\.[a-z_]+$/.test(t)) return t.replace(/^execution\./, 'step.').replace(/^validation\./, 'rule.');
  switch (n.source) {
    case 'execution':
    case 'step':
      return n.stepStatus === 'success' || n.stepStatus === 'completed' ? 'step.success' : 'step.failed';
    case 'validation':
    case 'rule':
      return n.status === 'violated' || n.status === 'warning' ? 'rule.violated' : 'rule.passed';
    default:
      return 'step.success';
  }
}

/** Whether a subscribed event pattern (exact, `x.*` or `*`) covers an event. */
export function eventMatches(pattern, event) {
  if (pattern === '*' || pattern === event) return true;
  return pattern.endsWith('.*') && event.startsWith(pattern.slice(0, -1));
}

const FIELDS = ['notificationId', 'threadId', 'stepId', 'stepName', 'idempotencyKey', 'ownerId', 'contractName', 'source',
  'notificationType', 'stepStatus', 'status', 'violationType', 'severity', 'message', 'details', 'timestamp'];

/**
 * One pushed notification. Delivery is at least once: call ack() once it is
 * handled; until then the engine counts it against maxInFlight and
 * redelivers it.
 */
export class Notification {
  #ack;
  #acked = false;

  /** @param {Record<string, unknown>} data @param {string|null} ackToken @param {(n: Notification) => void} ack */
  constructor(data, ackToken, ack) {
    for (const f of FIELDS) this[f] = data[f] ?? null;
    this.event = eventOf(data);
    this.ackToken = ackToken ?? null;
    this.#ack = ack;
  }

  get acked() { return this.#acked; }

  /** Acknowledges the notification (once; later calls do nothing). */
  ack() {
    if (this.#acked) return;
    this.#acked = true;
    this.#ack(this);
  }

  /** A thread event (thread.completed, thread.cancelled, thread.failed). */
  isThreadEvent() { return this.event.startsWith('thread.'); }
  isSuccess() { return this.event === 'step.success'; }
  isFailed() { return this.event === 'step.failed'; }
  isPassed() { return this.event === 'rule.passed'; }
  isViolated() { return this.event === 'rule.violated'; }
  isCritical() { return this.severity === 'critical'; }
  isWarning() { return this.severity === 'warning'; }
  isInfo() { return this.severity === 'info'; }

  toJSON() {
    const out = { event: this.event };
    for (const f of FIELDS) out[f] = this[f];
    return out;
  }
}
