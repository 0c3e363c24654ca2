/** The engine's notificationType → the SDK event name handlers subscribe to. */
const EVENT_OF_TYPE = {
  'execution.success': 'step.success',
  'execution.failed': 'step.failed',
  'validation.passed': 'rule.passed',
  'validation.violated': 'rule.violated',
  'thread.completed': 'thread.completed',
  'thread.cancelled': 'thread.cancelled',
};

/** Every event name subscribe() accepts, wildcards included. */
export const EVENTS = Object.freeze([
  'step.success', 'step.failed', 'step.*',
  'rule.passed', 'rule.violated', 'rule.*',
  'thread.completed', 'thread.cancelled', 'thread.*',
  '*',
]);

/**
 * Routes by what the engine says happened (notificationType, else source and
 * status); the Threadify Node SDK 0.1.x ignored both and delivered every
 * notification as step.success.
 */
export function eventOf(n) {
  const byType = EVENT_OF_TYPE[n.notificationType] ?? (Object.values(EVENT_OF_TYPE).includes(n.notificationType) ? n.notificationType : undefined);
  if (byType) return byType;
  switch (n.source) {
    case 'execution':
      return n.stepStatus === 'success' || n.stepStatus === 'completed' ? 'step.success' : 'step.failed';
    case 'validation':
      return n.status === 'violated' ? 'rule.violated' : 'rule.passed';
    case 'thread':
      return n.status === 'cancelled' ? 'thread.cancelled' : 'thread.completed';
    default:
      return 'step.success';
  }
}

/** Whether a subscribed event pattern (exact, `x.*` or `*`) covers an event. */
export function eventMatches(pattern, event) {
  if (pattern === '*' || pattern === event) return true;
  return pattern.endsWith('.*') && event.startsWith(pattern.slice(0, -1));
}

const FIELDS = ['notificationId', 'threadId', 'stepId', 'stepName', 'ownerId', 'contractName', 'source',
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
