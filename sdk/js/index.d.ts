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
  | 'COMPLEXITY_LIMIT_EXCEEDED';

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
  constructor(code: string, message: string, extra?: Record<string, unknown>);
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

export type EventName =
  | 'step.success' | 'step.failed' | 'step.*'
  | 'rule.passed' | 'rule.violated' | 'rule.*'
  | 'thread.completed' | 'thread.cancelled' | 'thread.*'
  | '*';

export const EVENTS: readonly EventName[];

export interface Subscription {
  event: EventName;
  stepName: string;
  unsubscribe(): Promise<void>;
}

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
  thread(threadId: string): Thread;

  subscribe(event: EventName, stepName: string, handler: (n: Notification) => void | Promise<void>): Promise<Subscription>;
  subscribe(event: 'thread.completed' | 'thread.cancelled' | 'thread.*', handler: (n: Notification) => void | Promise<void>): Promise<Subscription>;
  unsubscribe(stepName: string): Promise<void>;

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

  step(stepName: string, options?: { serviceName?: string } | string): Step;
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
  addContext(data: Record<string, unknown>, isPrivate?: boolean): this;
  subStep(name: string, payload?: Record<string, unknown>, status?: 'success' | 'failed'): this;
  success(messageOrData?: string | Record<string, unknown>): Promise<StepResult>;
  failed(messageOrData?: string | Record<string, unknown>): Promise<StepResult>;
  error(messageOrData?: string | Record<string, unknown>): Promise<StepResult>;
  stop(status?: string, messageOrData?: string | Record<string, unknown>): Promise<StepResult>;
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
  validation: { overallStatus: string; issues: unknown[]; criticalCount: number; warningCount: number } | null;
}

export class Notification {
  /** What happened, in subscribe()'s vocabulary. */
  readonly event: 'step.success' | 'step.failed' | 'rule.passed' | 'rule.violated' | 'thread.completed' | 'thread.cancelled';
  readonly notificationId: string | null;
  readonly threadId: string | null;
  readonly stepId: string | null;
  readonly stepName: string | null;
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
  isSuccess(): boolean;
  isFailed(): boolean;
  isPassed(): boolean;
  isViolated(): boolean;
  isCritical(): boolean;
  isWarning(): boolean;
  isInfo(): boolean;
  toJSON(): Record<string, unknown>;
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

export interface IntegrityStatus {
  verified: boolean;
  lastVerifiedAt: string;
  totalEvents: number;
  brokenAt: string | null;
  error: string | null;
}
