// Type definitions for @threadengine/sdk.

export interface ReconnectOptions {
  /** First delay before reconnecting (doubles per attempt, with jitter). Default 250. */
  initialDelayMs?: number;
  /** Largest delay between attempts. Default 10000. */
  maxDelayMs?: number;
  /** Attempts before giving up and rejecting what is pending with connection_lost. Default Infinity. */
  maxAttempts?: number;
}

export interface ConnectOptions {
  /** The engine's address: http(s)://host[:port][/proxy-prefix]. WebSocket and GraphQL URLs are derived from it. */
  engineUrl: string;
  /** An engine API key (td_…). */
  apiKey: string;
  /** Recorded as the service of every thread and step this connection writes. */
  serviceName?: string | null;
  /** Unacknowledged notifications the engine may push at once, 1–100. Default 10. */
  maxInFlight?: number;
  /** Default 10000. */
  connectTimeoutMs?: number;
  /** How long to wait for a reply: to a WebSocket request once sent on a live connection, to a GraphQL request. Default 30000. */
  requestTimeoutMs?: number;
  /** Default 30000; the connection is treated as dead after two periods without any frame. */
  heartbeatIntervalMs?: number;
  /** Requests held while reconnecting before new ones are refused. Default 10000. */
  maxQueuedRequests?: number;
  /** Reconnect with exponential backoff (default), or false to fail pending requests on the first drop. */
  reconnect?: ReconnectOptions | false;
  /** A WebSocket constructor; default: the platform's, else the ws package. */
  WebSocket?: unknown;
  /** A fetch implementation; default: globalThis.fetch. */
  fetch?: typeof fetch;
  /** Receives debug messages. */
  logger?: { debug(...args: unknown[]): void } | null;
}

export function connect(options: ConnectOptions): Promise<Connection>;

export function deriveEndpoints(engineUrl: string): { engineUrl: string; wsUrl: string; graphqlUrl: string };

/** The automatic idempotency key: FNV-1a 32 over UTF-8 of stepName + Go-style JSON of the context. */
export function idempotencyKey(stepName: string, context: Record<string, string>): string;

export const MAX_FRAME_BYTES: number;

export type ErrorCodeValue =
  | 'invalid_argument'
  | 'invalid_api_key'
  | 'forbidden'
  | 'engine_unreachable'
  | 'engine_unavailable'
  | 'engine_error'
  | 'connection_lost'
  | 'connection_closed'
  | 'timeout'
  | 'not_found'
  | 'graphql_error'
  | 'COMPLEXITY_LIMIT_EXCEEDED'
  | 'permission_denied'
  | 'validation_violated'
  | 'validation_unavailable'
  | 'wait_timed_out'
  | 'wait_cancelled'
  | 'wait_unsupported'
  | 'invalid_wait_response'
  | 'spans_rejected';

export const ErrorCode: {
  readonly INVALID_ARGUMENT: 'invalid_argument';
  readonly INVALID_API_KEY: 'invalid_api_key';
  readonly FORBIDDEN: 'forbidden';
  readonly ENGINE_UNREACHABLE: 'engine_unreachable';
  readonly ENGINE_UNAVAILABLE: 'engine_unavailable';
  readonly ENGINE_ERROR: 'engine_error';
  readonly CONNECTION_LOST: 'connection_lost';
  readonly CONNECTION_CLOSED: 'connection_closed';
  readonly TIMEOUT: 'timeout';
  readonly NOT_FOUND: 'not_found';
  readonly GRAPHQL_ERROR: 'graphql_error';
  readonly COMPLEXITY_LIMIT_EXCEEDED: 'COMPLEXITY_LIMIT_EXCEEDED';
  readonly PERMISSION_DENIED: 'permission_denied';
  readonly VALIDATION_VIOLATED: 'validation_violated';
  readonly VALIDATION_UNAVAILABLE: 'validation_unavailable';
  readonly WAIT_TIMED_OUT: 'wait_timed_out';
  readonly WAIT_CANCELLED: 'wait_cancelled';
  readonly WAIT_UNSUPPORTED: 'wait_unsupported';
  readonly INVALID_WAIT_RESPONSE: 'invalid_wait_response';
  readonly SPANS_REJECTED: 'spans_rejected';
};

export class ThreadengineError extends Error {
  /** One of ErrorCode, or the engine's own code (e.g. thread_closed, invalid_transition). */
  code: ErrorCodeValue | (string & {});
  /** HTTP status, for GraphQL requests. */
  status?: number;
  /** For COMPLEXITY_LIMIT_EXCEEDED: the query's cost and the engine's limit. */
  complexity?: number;
  limit?: number;
  /** GraphQL errors as the engine sent them. */
  errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
  /** The WebSocket action that failed, and the engine's reply. */
  action?: string;
  reply?: Record<string, unknown>;
  details?: unknown;
  /** The engine's own code where the SDK's differs (GraphQL, OTLP), or a denial's reason (invocation_cancelled, not_a_party, …). */
  engineCode?: string;
  /** When the engine said how long to wait before trying again (429, 503), in ms. GraphQL reads refused with 429 limit_exceeded are retried after it by the SDK (at most 5 times, within requestTimeoutMs) before this error is thrown. */
  retryAfterMs?: number;
  /** spans_rejected: how many spans of the batch the engine refused. */
  rejectedSpans?: number;
  constructor(code: string, message: string, extra?: Record<string, unknown>);
}

/** What a wait answer says. */
export type DecisionValue = 'allowed' | 'denied' | 'passed' | 'violated' | 'unvalidated' | 'timed_out' | 'cancelled' | 'pending';

export const Decision: {
  readonly ALLOWED: 'allowed';
  readonly DENIED: 'denied';
  readonly PASSED: 'passed';
  readonly VIOLATED: 'violated';
  readonly UNVALIDATED: 'unvalidated';
  readonly TIMED_OUT: 'timed_out';
  readonly CANCELLED: 'cancelled';
  readonly PENDING: 'pending';
};

/** The longest wait the engine serves, in milliseconds (300000). */
export const MAX_WAIT_MS: number;

/** The engine's answer to a wait. */
export interface WaitResult {
  decision: DecisionValue | (string & {});
  threadId: string | null;
  stepName: string | null;
  stepId: string | null;
  invocationId: string | null;
  message: string;
  /** Contract issues: why a permission was denied, or a step violated (warnings of a passed one). */
  violations: ValidationIssue[];
  /** The engine's code on some denials (invocation_cancelled, thread_closed, not_a_party). */
  code: string | null;
}

/** A wait that ended without the outcome asked for; the subclass (and code) says which. */
export class WaitError extends ThreadengineError {
  /** The engine's decision (denied, violated, unvalidated, timed_out, cancelled, pending), when it gave one or the SDK decided for it. */
  decision?: DecisionValue | (string & {}) | null;
  /** The engine's whole answer, when there was one. */
  result?: WaitResult;
  violations?: ValidationIssue[];
  stepName?: string;
  stepId?: string;
  invocationId?: string;
  /** step.success(…, { waitFor: true }): the step, which was recorded. */
  step?: StepResult;
}
/** permission_denied: decision denied (engineCode may say why). */
export class PermissionDeniedError extends WaitError { constructor(message: string, extra?: Record<string, unknown>); }
/** validation_violated: the recorded step broke its contract. */
export class ValidationViolatedError extends WaitError { constructor(message: string, extra?: Record<string, unknown>); }
/** validation_unavailable: decision unvalidated (a free-form thread), or one the SDK does not know. */
export class ValidationUnavailableError extends WaitError { constructor(message: string, extra?: Record<string, unknown>); }
/** wait_timed_out: decision timed_out, or no answer in time (the SDK sent cancelWait). */
export class WaitTimeoutError extends WaitError { constructor(message: string, extra?: Record<string, unknown>); }
/** wait_cancelled: decision cancelled, or the AbortSignal fired (the SDK sent cancelWait). */
export class WaitCancelledError extends WaitError { constructor(message: string, extra?: Record<string, unknown>); }
/** wait_unsupported: decision pending or none (the engine cannot wait synchronously). */
export class WaitUnsupportedError extends WaitError { constructor(message: string, extra?: Record<string, unknown>); }
/** invalid_wait_response: the answer names another invocation or step. */
export class InvalidWaitResponseError extends WaitError { constructor(message: string, extra?: Record<string, unknown>); }

export interface WaitOptions {
  /** Milliseconds, above 0 and at most 300000; default 10000. */
  timeout?: number;
  /** Aborting ends the wait with WaitCancelledError (and tells the engine: cancelWait). */
  signal?: AbortSignal;
}

export interface PermissionWaitOptions extends WaitOptions {
  /** Names this invocation (≤ 128 characters); default a new UUID. Asking again with it is allowed again, consuming nothing more. */
  invocationId?: string;
}

/** Permission to run one invocation of a step (thread.waitFor). */
export class PermissionGrant {
  readonly decision: 'allowed';
  readonly threadId: string;
  readonly stepName: string;
  readonly invocationId: string;
  readonly message: string;
  readonly violations: ValidationIssue[];
  /** Gives the permission back (decision cancelled); a report carrying it is then refused (invocation_cancelled). */
  cancel(): Promise<WaitResult>;
  toJSON(): Record<string, unknown>;
}

export type ConnectionEvent = 'disconnected' | 'reconnecting' | 'reconnected' | 'closed' | 'error';

export interface StartOptions {
  /** "name" (latest version) or "name:version". */
  contract?: string;
  refs?: Record<string, unknown>;
  tags?: string[];
  /** Contract party; default: serviceName without a trailing "-service", else "participant". */
  role?: string;
  serviceName?: string;
}

/** Options of connection.thread(key): used when the key's thread is created, ignored when it is resumed. */
export interface ThreadKeyOptions {
  label?: string;
  /** "name" or "name:version"; resuming with another contract is refused (contract_conflict). */
  contract?: string;
  /** The party this connection acts as; default with a contract: serviceName without "-service". */
  role?: string;
  refs?: Record<string, unknown>;
  tags?: string[];
  serviceName?: string;
}

/** Every push type the engine sends. */
export type PushEvent =
  | 'step.success' | 'step.failed'
  | 'rule.passed' | 'rule.violated'
  | 'thread.completed' | 'thread.cancelled' | 'thread.failed';

export type EventName = PushEvent | 'step.*' | 'rule.*' | 'thread.*' | '*';
/** Events subscribed per step: subscribe(event, stepName, handler). */
export type StepEventName = 'step.success' | 'step.failed' | 'step.*' | 'rule.passed' | 'rule.violated' | 'rule.*' | '*';
/** Events subscribed without a step: thread events, thread-level rule.violated alerts, or all of them ("*"). */
export type ThreadLevelEventName = 'thread.completed' | 'thread.cancelled' | 'thread.failed' | 'thread.*' | 'rule.violated' | 'rule.*' | '*';

export const EVENTS: readonly EventName[];
export const PUSH_EVENTS: readonly PushEvent[];

export interface Subscription {
  event: EventName;
  stepName: string;
  unsubscribe(): Promise<void>;
}

/** The notification type a handler of event E receives. */
export type NotificationOf<E extends EventName> =
  E extends '*' ? AnyNotification :
  E extends `${infer P}.*` ? Extract<AnyNotification, { event: `${P}.${string}` }> :
  Extract<AnyNotification, { event: E }>;

export type NotificationHandler<E extends EventName> = (n: NotificationOf<E>) => void | Promise<void>;

export class Connection {
  readonly engineUrl: string;
  readonly wsUrl: string;
  readonly graphqlUrl: string;
  readonly serviceName: string | null;
  readonly ownerId: string | null;
  readonly companyId: string | null;
  readonly state: 'connecting' | 'open' | 'reconnecting' | 'closing' | 'closed';
  readonly isConnected: boolean;

  on(event: ConnectionEvent, listener: (arg: any) => void): () => void;
  off(event: ConnectionEvent, listener: (arg: any) => void): void;

  start(label?: string, options?: StartOptions): Promise<Thread>;
  start(options: StartOptions): Promise<Thread>;
  join(tokenOrThreadId: string, role?: string): Promise<Thread>;
  /** Starts or resumes the one thread of an application key (thread.created says which). */
  thread(threadKey: string, options?: ThreadKeyOptions): Promise<Thread>;
  /** A handle for a thread id; nothing is sent. */
  threadById(threadId: string): Thread;
  /** An OpenTelemetry span exporter to this engine, with this connection's key. */
  createSpanExporter(options?: SpanExporterOptions): ThreadengineSpanExporter;

  subscribe<E extends StepEventName>(event: E, stepName: string, handler: NotificationHandler<E>): Promise<Subscription>;
  subscribe<E extends ThreadLevelEventName>(event: E, handler: NotificationHandler<E>): Promise<Subscription>;
  /** Every handler of a step name ("global": thread events and alerts). */
  unsubscribe(stepName: string): Promise<void>;
  /** The handlers of one event on a step name. */
  unsubscribe(event: EventName, stepName: string): Promise<void>;

  getThread(threadId: string): Promise<ThreadView>;
  getThreadByRef(filter: { refKey?: string; refValue: string }): Promise<ThreadView | null>;
  getThreadsByRef(filter: RefFilter): Promise<ThreadView[]>;
  threadsByRef(filter: RefFilter): Promise<ThreadConnection>;
  threads(filter?: ThreadFilter): Promise<ThreadConnection>;
  getThreadChain(rootId: string, maxDepth?: number): Promise<ThreadView[]>;
  threadChain(rootId: string, maxDepth?: number): Promise<ThreadView[]>;
  getValidationResults(threadId: string, options?: ValidationOptions): Promise<ValidationResult[]>;
  validationResults(threadId: string, options?: ValidationOptions): Promise<ValidationResult[]>;
  verifyIntegrity(threadId: string): Promise<IntegrityStatus>;
  stepHistory(filter: StepHistoryFilter): Promise<StepAttempt[]>;
  query<T = any>(query: string, variables?: Record<string, unknown>): Promise<{ data: T; extensions: { cost?: number } & Record<string, unknown> }>;

  close(): Promise<void>;
}

export class Thread {
  readonly threadId: string;
  readonly id: string;
  readonly contractId: string | null;
  readonly contractName: string | null;
  readonly contractVersion: number | null;
  readonly role: string | null;
  readonly accessLevel: string | null;
  readonly refs: Record<string, string>;
  /** connection.thread(key): its key, label, tags, and whether that call created it (false: resumed). Null elsewhere. */
  readonly threadKey: string | null;
  readonly label: string | null;
  readonly tags: string[];
  readonly created: boolean | null;

  step(stepName: string, options?: { serviceName?: string } | string): Step;
  /** Waits until the contract lets this connection run one invocation of stepName; its next report carries the grant. */
  /** May this caller record the step now? Read-only (never a grant); context is judged when given. */
  can(step: string | DecisionTarget, context?: Record<string, string | number | boolean>): Promise<CanDecision>;
  /** Advice on a step; never a permission (recommendation unavailable without an engine classifier). */
  should(step: string | DecisionTarget): Promise<ShouldDecision>;
  /** The paths of up to 4 steps open from now; only each first step is judged now. */
  next(): Promise<NextDecision>;
  waitFor(stepName: string, options?: PermissionWaitOptions): Promise<PermissionGrant>;
  /** Waits for the contract's verdict on one recorded attempt; resolves when it passed. */
  waitForValidation(stepName: string, stepId: string, options?: WaitOptions): Promise<WaitResult>;
  /** The next step.success / step.failed push of stepName on this thread (optionally of these stepStatus values); subscribes by itself. */
  waitForStep(stepName: string, options?: WaitOptions & { statuses?: string[] }): Promise<StepSuccessNotification | StepFailedNotification>;
  /** subscribe(), for this thread's notifications only. */
  on<E extends StepEventName>(event: E, stepName: string, handler: NotificationHandler<E>): Promise<Subscription>;
  on<E extends ThreadLevelEventName>(event: E, handler: NotificationHandler<E>): Promise<Subscription>;
  addRefs(refs: Record<string, unknown>): Promise<void>;
  linkThread(threadId: string, relationship?: string): Promise<void>;
  inviteParty(options: { role: string; accessLevel?: 'external' | 'observer' | 'participant'; expiresIn?: string }): Promise<{
    threadToken: string; threadId: string; role: string; accessLevel: string; expiresAt: Date;
  }>;
  complete(reason?: string | Record<string, unknown>): Promise<ThreadEndResult>;
  cancel(reason?: string | Record<string, unknown>): Promise<ThreadEndResult>;
}

export interface ThreadEndResult {
  threadId: string;
  status: 'completed' | 'cancelled';
  endedAt: string | null;
  message: string;
}

export class Step {
  readonly stepName: string;
  readonly serviceName: string | null;
  readonly startedAt: string;
  readonly context: Record<string, string>;
  readonly key: string;
  idempotencyKey(key: string): this;
  /** Names this attempt (≤ 128 characters) instead of the grant's or a new UUID. */
  invocationId(id: string): this;
  addContext(data: Record<string, unknown>, isPrivate?: boolean): this;
  subStep(name: string, payload?: Record<string, unknown>, status?: 'success' | 'failed'): this;
  success(messageOrData?: string | Record<string, unknown>, options?: StepOptions): Promise<StepResult>;
  failed(messageOrData?: string | Record<string, unknown>, options?: StepOptions): Promise<StepResult>;
  error(messageOrData?: string | Record<string, unknown>, options?: StepOptions): Promise<StepResult>;
  stop(status?: string, messageOrData?: string | Record<string, unknown>, options?: StepOptions): Promise<StepResult>;
}

export interface StepOptions {
  /** Ask for the contract's verdict in the reply (result.verdict); a violation rejects with ValidationViolatedError. */
  waitFor?: boolean;
}

export interface StepResult {
  threadId: string;
  stepId: string | null;
  stepName: string;
  idempotencyKey: string;
  status: string;
  retryCount: number;
  attempt: number;
  /** The engine already had this step (completed) or this very attempt (re-sent after a dropped connection). */
  duplicate: boolean;
  threadStatus: string | null;
  /** The invocation this attempt was sent as (a grant's, one set with invocationId(), or a new UUID). */
  invocationId: string;
  /** The contract's judgement (contract threads; null with waitFor, which gives verdict instead). */
  validation: { overallStatus: string; issues: ValidationIssue[]; criticalCount: number; warningCount: number } | null;
  /** With { waitFor: true }: the verdict (decision passed; violations are warnings). */
  verdict: WaitResult | null;
}

export class Notification {
  /** What happened, in subscribe()'s vocabulary. */
  readonly event: PushEvent;
  readonly notificationId: string | null;
  readonly threadId: string | null;
  readonly stepId: string | null;
  readonly stepName: string | null;
  readonly idempotencyKey: string | null;
  readonly ownerId: string | null;
  readonly contractName: string | null;
  readonly source: string | null;
  readonly notificationType: string | null;
  readonly stepStatus: string | null;
  readonly status: string | null;
  readonly violationType: string | null;
  readonly severity: string | null;
  readonly message: string | null;
  readonly details: unknown;
  readonly timestamp: string | null;
  readonly ackToken: string | null;
  readonly acked: boolean;
  ack(): void;
  isThreadEvent(): boolean;
  isSuccess(): boolean;
  isFailed(): boolean;
  isPassed(): boolean;
  isViolated(): boolean;
  isCritical(): boolean;
  isWarning(): boolean;
  isInfo(): boolean;
  toJSON(): Record<string, unknown>;
}

export type Severity = 'critical' | 'major' | 'minor' | 'warning' | 'info';

/** step.success: a step attempt succeeded. */
export interface StepSuccessNotification extends Notification {
  readonly event: 'step.success';
  readonly stepName: string;
  readonly stepId: string;
  readonly stepStatus: string;
}
/** step.failed: a step attempt failed (stepStatus failed, error, …); details.error is the reported error. */
export interface StepFailedNotification extends Notification {
  readonly event: 'step.failed';
  readonly stepName: string;
  readonly stepId: string;
  readonly stepStatus: string;
  readonly details: { error?: unknown } & Record<string, unknown>;
}
/** rule.passed: a step attempt passed its contract's rules. */
export interface RulePassedNotification extends Notification {
  readonly event: 'rule.passed';
  readonly stepName: string;
  readonly stepId: string;
}
/** rule.violated: a step broke its contract (or, with stepName "global", a thread-level alert: overdue, silent). */
export interface RuleViolatedNotification extends Notification {
  readonly event: 'rule.violated';
  readonly stepName: string;
  readonly violationType: string;
  readonly severity: Severity;
  readonly details: { issues?: ValidationIssue[] } & Record<string, unknown>;
}
/** thread.completed: the thread ended completed (by hand or by its terminal step). */
export interface ThreadCompletedNotification extends Notification { readonly event: 'thread.completed'; readonly threadId: string; }
/** thread.cancelled: the thread was cancelled. */
export interface ThreadCancelledNotification extends Notification { readonly event: 'thread.cancelled'; readonly threadId: string; }
/** thread.failed: a step's violation failed the thread (violationType and severity are the violation's). */
export interface ThreadFailedNotification extends Notification {
  readonly event: 'thread.failed';
  readonly threadId: string;
  readonly violationType: string;
  readonly severity: Severity;
}
export type AnyNotification =
  | StepSuccessNotification | StepFailedNotification | RulePassedNotification | RuleViolatedNotification
  | ThreadCompletedNotification | ThreadCancelledNotification | ThreadFailedNotification;

export interface ValidationIssue {
  type: string;
  message: string;
  field?: string | null;
  expected?: string | null;
  actual?: string | null;
  rule?: string | null;
  severity?: Severity | null;
}

// ---- OpenTelemetry ----------------------------------------------------------

/** @opentelemetry/core's ExportResultCode values. */
export const ExportResultCode: { readonly SUCCESS: 0; readonly FAILED: 1 };

/** The parts of an @opentelemetry/sdk-trace-base ReadableSpan the exporter reads (1.x and 2.x). */
export interface ReadableSpanLike {
  readonly name: string;
  readonly kind?: number;
  spanContext(): { traceId: string; spanId: string; traceState?: { serialize(): string } };
  /** 1.x */
  readonly parentSpanId?: string;
  /** 2.x */
  readonly parentSpanContext?: { spanId: string };
  readonly startTime: [number, number];
  readonly endTime: [number, number];
  readonly attributes: Record<string, unknown>;
  readonly events?: ReadonlyArray<{ name: string; time: [number, number]; attributes?: Record<string, unknown> }>;
  readonly links?: ReadonlyArray<{ context: { traceId: string; spanId: string }; attributes?: Record<string, unknown> }>;
  readonly status?: { code: number; message?: string };
  readonly resource?: { attributes: Record<string, unknown> };
  readonly instrumentationScope?: { name: string; version?: string };
  readonly instrumentationLibrary?: { name: string; version?: string };
}

export interface SpanExporterOptions {
  /** Span attributes that become thread refs: names (ref = attribute name) or { attribute: refKey }. */
  refs?: string[] | Record<string, string>;
  /** Span names dropped before sending: exact, or a prefix ending in "*". */
  filters?: string[];
  /** Thread tags for new threads (threadify.tags), or a function of the span. */
  tags?: string[] | ((span: ReadableSpanLike) => string[] | undefined);
  /** An application key (as connection.thread(key)) for the span's thread, or a function of the span. */
  threadKey?: string | ((span: ReadableSpanLike) => string | undefined);
  /** Recorded as the steps' service (threadify.service); default: the connection's serviceName. */
  serviceName?: string;
  /** Complete (status OK/UNSET) or cancel (ERROR) a trace's thread when its root span is exported; needs a connection. Default false. */
  endThreadOnRootSpan?: boolean;
  /** Per request; default 10000. */
  timeoutMs?: number;
  /** Retries of 429/502/503/504 and network errors; default 3. */
  maxRetries?: number;
  fetch?: typeof fetch;
}

export interface StandaloneSpanExporterOptions extends SpanExporterOptions {
  engineUrl: string;
  apiKey: string;
  /** For endThreadOnRootSpan. */
  connection?: Connection;
}

/**
 * An OpenTelemetry SpanExporter (structurally @opentelemetry/sdk-trace-base's)
 * sending spans to the engine's POST /v1/traces (OTLP/HTTP JSON).
 */
export class ThreadengineSpanExporter {
  constructor(connection: Connection, options?: SpanExporterOptions);
  constructor(options: StandaloneSpanExporterOptions);
  /** The OTLP endpoint. */
  readonly url: string;
  export(spans: ReadableSpanLike[], resultCallback: (result: { code: 0 | 1; error?: Error }) => void): void;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

export interface RefFilter {
  refKey?: string | null;
  refValue: string;
  status?: string | null;
  startedAfter?: string | null;
  startedBefore?: string | null;
  limit?: number | null;
  offset?: number | null;
}

export interface ThreadFilter {
  actor?: string | null;
  contractName?: string | null;
  contractVersion?: number | null;
  status?: string | null;
  startedAfter?: string | null;
  startedBefore?: string | null;
  completedAfter?: string | null;
  completedBefore?: string | null;
  limit?: number | null;
  offset?: number | null;
}

export interface ThreadConnection {
  threads: ThreadView[];
  totalCount: number;
}

export interface StepFilter {
  stepName?: string | null;
  idempotencyKey?: string | null;
  /** success and completed are interchangeable. */
  status?: string | null;
}

export class ThreadView {
  readonly id: string;
  readonly threadId: string;
  readonly label: string | null;
  readonly contractId: string | null;
  readonly contractName: string | null;
  readonly contractVersion: number | null;
  readonly ownerId: string;
  readonly companyId: string;
  readonly status: string;
  readonly lastHash: string | null;
  readonly refs: Record<string, string>;
  readonly startedAt: string | null;
  readonly completedAt: string | null;
  readonly error: string | null;
  /** filter: "name", "name:idempotencyKey" or an object. */
  steps(filter?: string | StepFilter): Promise<StepView[]>;
  history(stepName: string, options?: Omit<StepHistoryFilter, 'threadId' | 'stepName'>): Promise<StepAttempt[]>;
  validationResults(options?: ValidationOptions): Promise<ValidationResult[]>;
  verifyIntegrity(): Promise<IntegrityStatus>;
  chain(maxDepth?: number): Promise<ThreadView[]>;
  refresh(): Promise<ThreadView>;
}

export class StepView {
  readonly threadId: string;
  readonly stepName: string;
  readonly idempotencyKey: string;
  readonly status: string;
  readonly retryCount: number;
  readonly firstSeenAt: string;
  readonly lastUpdatedAt: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly latestStepID: string;
  readonly previousStep: string | null;
  readonly actor: string | null;
  readonly actorService: string | null;
  readonly latestContext: Record<string, string>;
  readonly verified: boolean | null;
  readonly verificationError: string | null;
  readonly lastExecution: StepAttempt | null;
  history(options?: { limit?: number; offset?: number; startAt?: string; endAt?: string; actor?: string }): Promise<StepAttempt[]>;
  subSteps(): Promise<SubStep[]>;
}

export interface StepHistoryFilter {
  threadId: string;
  stepName: string;
  idempotencyKey?: string | null;
  limit?: number | null;
  offset?: number | null;
  startAt?: string | null;
  endAt?: string | null;
  activityType?: string | null;
  actor?: string | null;
}

export interface StepAttempt {
  attempt: number;
  timestamp: string;
  status: string;
  context: Record<string, string>;
  error: string | null;
  /** Milliseconds from startedAt to finishedAt. */
  duration: number;
  startedAt: string | null;
  finishedAt: string | null;
  metadata: unknown;
  actor: string;
  actorService: string;
}

export interface SubStep {
  id: string;
  threadId: string;
  stepId: string;
  name: string;
  status: string;
  payload: unknown;
  recordedAt: string;
}

export interface ValidationOptions {
  stepName?: string;
  idempotencyKey?: string;
  stepId?: string;
  validationType?: string;
  /** Default 10, max 100. */
  limit?: number;
  offset?: number;
}

export interface ValidationResult {
  validationId: string;
  threadId: string;
  stepId: string;
  stepName: string;
  idempotencyKey: string;
  timestamp: string;
  validations: Array<{ type: string; message: string; field: string | null; expected: string | null; actual: string | null; rule: string | null; severity: string | null }>;
  overallStatus: string;
  hasCriticalViolation: boolean;
  criticalCount: number;
  warningCount: number;
  minorCount: number;
  infoCount: number;
  totalValidations: number;
}

/** Exactly one of action (a step name) and goal (words the engine's classifier matches to one step). */
export interface DecisionTarget {
  action?: string;
  goal?: string;
}

export interface CanDecision {
  threadId: string;
  stepName: string;
  allowed: boolean;
  /** allowed, denied, requires_claim (only a waitFor grant can take a fresh prerequisite) or uncertain (a goal matched no step). */
  status: 'allowed' | 'denied' | 'requires_claim' | 'uncertain';
  matchedBy: 'exact' | 'classifier' | 'none';
  requiredSteps: string[];
  satisfiedSteps: string[];
  missingSteps: string[];
  previousStep: string | null;
  reason: string;
  violations: { field: string; rule: string; message: string }[];
}

export interface ShouldDecision {
  threadId: string;
  stepName: string;
  eligible: boolean;
  recommendation: 'yes' | 'no' | 'uncertain' | 'unavailable';
  reason: string;
}

export interface NextDecision {
  threadId: string;
  paths: { actions: string[]; status: 'allowed' | 'requires_claim'; reason: string }[];
}

export interface IntegrityStatus {
  verified: boolean;
  lastVerifiedAt: string;
  totalEvents: number;
  brokenAt: string | null;
  error: string | null;
}
