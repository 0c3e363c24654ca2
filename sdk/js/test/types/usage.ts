// Compiled with tsc --noEmit (strict) to check index.d.ts against real use;
// never run.
import {
  connect, deriveEndpoints, idempotencyKey, ThreadengineError, ErrorCode, EVENTS, PUSH_EVENTS, Decision,
  WaitError, PermissionDeniedError, ValidationViolatedError, WaitTimeoutError, ThreadengineSpanExporter, ExportResultCode,
  type Connection, type Thread, type StepResult, type ThreadView, type StepView, type Notification, type PermissionGrant,
  type WaitResult, type CanDecision, type ShouldDecision, type NextDecision, type RuleViolatedNotification, type StepFailedNotification, type ThreadFailedNotification,
} from '@threadengine/sdk';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';

export async function example(): Promise<void> {
  const conn: Connection = await connect({
    engineUrl: 'https://example.com/threadengine',
    apiKey: 'td_x',
    serviceName: 'checkout-service',
    maxInFlight: 20,
    reconnect: { initialDelayMs: 100, maxAttempts: 10 },
  });
  const off = conn.on('reconnected', () => undefined);
  off();

  const sub = await conn.subscribe('step.failed', 'pay', (n: Notification) => {
    const e: 'step.success' | 'step.failed' | 'rule.passed' | 'rule.violated' | 'thread.completed' | 'thread.cancelled' | 'thread.failed' = n.event;
    void e;
    n.ack();
  });
  await conn.subscribe('thread.completed', async (n) => { n.ack(); });
  await sub.unsubscribe();

  const t: Thread = await conn.start('Order-1', { refs: { orderId: 1 }, tags: ['a'] });
  await conn.start({ contract: 'order_flow:2', role: 'checkout' });
  const r: StepResult = await t.step('validate').addContext({ items: 3 }, true).subStep('s', { x: 1 }).idempotencyKey('k').success('ok');
  const dup: boolean = r.duplicate;
  void dup;
  await t.step('pay').failed({ error: 'gateway timeout' });
  await t.addRefs({ tracking: 'TR-1' });
  await t.linkThread('00000000-0000-4000-8000-000000000000');
  const inv = await t.inviteParty({ role: 'warehouse', accessLevel: 'observer', expiresIn: '2h' });
  const joined: Thread = await conn.join(inv.threadToken);
  void joined;
  const ended = await t.complete({ by: 'me' });
  const status: 'completed' | 'cancelled' = ended.status;
  void status;

  const view: ThreadView = await conn.getThread(t.threadId);
  const steps: StepView[] = await view.steps('pay:k');
  const last = steps[0]?.lastExecution?.status;
  void last;
  const attempts = await steps[0]!.history({ limit: 5 });
  const ms: number = attempts[0]!.duration;
  void ms;
  const byRef = await conn.threadsByRef({ refKey: 'orderId', refValue: '1' });
  const total: number = byRef.totalCount;
  void total;
  const vr = await conn.getValidationResults(t.threadId, { stepName: 'pay', limit: 5 });
  const critical: boolean = vr[0]!.hasCriticalViolation;
  void critical;
  const integrity = await view.verifyIntegrity();
  const ok: boolean = integrity.verified;
  void ok;
  const { data, extensions } = await conn.query<{ threads: { totalCount: number } }>('{ threads { totalCount } }');
  const n: number = data.threads.totalCount + (extensions.cost ?? 0);
  void n;

  try {
    await conn.query('{ huge }');
  } catch (err) {
    if (err instanceof ThreadengineError && err.code === ErrorCode.COMPLEXITY_LIMIT_EXCEEDED) {
      const over: number | undefined = err.complexity;
      void over;
    }
  }
  // Typed handlers: each push type gets its own notification type.
  await conn.subscribe('rule.violated', 'pay', (n) => {
    const typed: RuleViolatedNotification = n;
    const severity: 'critical' | 'major' | 'minor' | 'warning' | 'info' = n.severity;
    void typed; void severity;
  });
  await conn.subscribe('thread.failed', (n) => {
    const typed: ThreadFailedNotification = n;
    const id: string = n.threadId;
    void typed; void id;
  });
  await conn.subscribe('step.*', 'pay', (n) => {
    const e: 'step.success' | 'step.failed' = n.event;
    void e;
  });
  await conn.subscribe('rule.violated', (n) => { void n.violationType; }); // thread-level alerts
  // @ts-expect-error step events need a step name
  await conn.subscribe('step.failed', () => undefined);
  // @ts-expect-error a thread event is not per step
  await conn.subscribe('thread.completed', 'pay', () => undefined);
  await conn.unsubscribe('step.failed', 'pay');
  const pushes: readonly string[] = PUSH_EVENTS;
  void pushes;

  // Thread keys, waits, verdicts.
  const keyed: Thread = await conn.thread('order-1', { contract: 'order_flow', label: 'Order 1', refs: { orderId: 1 }, tags: ['web'] });
  const created: boolean | null = keyed.created;
  void created;
  const byId: Thread = conn.threadById(keyed.threadId);
  void byId;
  const ac = new AbortController();
  const grant: PermissionGrant = await keyed.waitFor('pay', { timeout: 5000, signal: ac.signal, invocationId: 'inv-1' });
  const granted: string = grant.invocationId;
  void granted;
  const given: WaitResult = await grant.cancel();
  const d: string = given.decision;
  void d;
  const verdict = await keyed.step('validate').invocationId('inv-2').success('ok', { waitFor: true });
  const decided: string | undefined = verdict.verdict?.decision;
  void decided;
  const v: WaitResult = await keyed.waitForValidation('validate', verdict.stepId ?? '', { timeout: 1000 });
  void v;
  const can: CanDecision = await keyed.can('pay', { amount: 5, currency: 'GBP', express: true });
  const allowed: boolean = can.allowed && can.status === 'allowed' && can.missingSteps.length === 0;
  void allowed;
  const byGoal: CanDecision = await keyed.can({ goal: 'take the payment' });
  void byGoal;
  const should: ShouldDecision = await keyed.should({ action: 'pay' });
  const rec: 'yes' | 'no' | 'uncertain' | 'unavailable' = should.recommendation;
  void rec;
  const next: NextDecision = await keyed.next();
  const first: string[] = next.paths[0]?.actions ?? [];
  void first;
  const seen: StepFailedNotification | { event: 'step.success' } = await keyed.waitForStep('pay', { statuses: ['failed'], timeout: 1000 });
  void seen;
  await keyed.on('thread.*', (n) => { const e: 'thread.completed' | 'thread.cancelled' | 'thread.failed' = n.event; void e; });
  try {
    await keyed.waitFor('ship');
  } catch (err) {
    if (err instanceof PermissionDeniedError) {
      const why: string | undefined = err.engineCode;
      void why;
    } else if (err instanceof ValidationViolatedError || err instanceof WaitTimeoutError) {
      const r: WaitResult | undefined = err.result;
      void r;
    } else if (err instanceof WaitError && err.decision === Decision.CANCELLED) {
      void err.code;
    }
  }

  // The span exporter is an OpenTelemetry SpanExporter.
  const exporter: SpanExporter = conn.createSpanExporter({ refs: { 'order.id': 'orderId' }, filters: ['llm.*'], threadKey: (span) => String(span.attributes['order.id']) });
  const standalone: SpanExporter = new ThreadengineSpanExporter({ engineUrl: 'http://localhost:8081', apiKey: 'td_x', tags: ['otel'] });
  exporter.export([], (r) => { if (r.code === ExportResultCode.FAILED) void r.error; });
  await standalone.shutdown();

  const ws: string = deriveEndpoints('http://localhost:8081').wsUrl;
  const key: string = idempotencyKey('s', { a: '1' });
  void ws; void key; void EVENTS;
  await conn.close();
}
