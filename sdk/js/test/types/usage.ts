// Compiled with tsc --noEmit (strict) to check index.d.ts against real use;
// never run.
import {
  connect, deriveEndpoints, idempotencyKey, ThreadengineError, ErrorCode, EVENTS,
  type Connection, type Thread, type StepResult, type ThreadView, type StepView, type Notification,
} from '@threadengine/sdk';

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
    const e: 'step.success' | 'step.failed' | 'rule.passed' | 'rule.violated' | 'thread.completed' | 'thread.cancelled' = n.event;
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
  const ws: string = deriveEndpoints('http://localhost:8081').wsUrl;
  const key: string = idempotencyKey('s', { a: '1' });
  void ws; void key; void EVENTS;
  await conn.close();
}
