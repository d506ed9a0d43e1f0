// Provider lifecycle reports: the route fails closed (503 problem, nothing read, nothing written),
// and the durable record behind it is idempotent and reconciled against the current lease under the
// Environment lock. A report is not proof a sandbox is gone: a matching one asks for a fresh exact
// observation and releases nothing; a stale or foreign one is recorded as such and changes nothing.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beginAttempt, completeAttempt } from '../../actors/attempts.ts';
import { EnvironmentNotFoundError } from '../../actors/errors.ts';
import { createEnvironmentRuntime } from '../../actors/services.ts';
import {
  ProviderReportConflictError,
  recordReport,
  type ProviderReport,
} from '../../actors/sandbox/provider-reports.ts';
import { createLogger } from '../../lib/logger.ts';
import { readAttemptsOfOperation } from '../../store/attempts.ts';
import { readCurrentLease } from '../../store/leases.ts';
import { readReportsOf } from '../../store/provider-reports.ts';
import { runAttempt } from '../../workers/effect-processor.ts';
import { runnerDeps } from '../../workers/host.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, type Scenario } from '../support/sandbox-flow.ts';
import { environmentRows, mutableRows, problemOf } from '../support/sandbox-scenarios.ts';

const logger = createLogger({ level: 'silent' });
const received = new Date('2030-01-02T03:04:05.678Z');

interface Lease {
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
}

describe('provider lifecycle reports (postgres)', () => {
  let pg: IsolatedPostgres;
  let h: Harness;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    // No workers: each test drives the attempts it needs, so nothing moves behind its back.
    h = await buildHarness(pg.open(), { workers: false });
  });
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  const deps = () => ({ db: h.db, runtime: h.runtime });
  const runner = () => ({
    ...runnerDeps({ db: h.db, runtime: h.runtime, provider: h.provider, logger }, 5_000),
    logger,
  });
  const reportRows = async () =>
    (await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM provider_lifecycle_reports')).rows[0]?.n;

  async function provision(s: Scenario): Promise<Lease & { attemptId: string }> {
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    const lease = await json<Lease>(res);
    const attempts = await readAttemptsOfOperation(h.db, lease.operationId);
    const attemptId = attempts.find((a) => a.kind === 'provision')?.attemptId;
    if (attemptId === undefined) throw new Error('no provision attempt');
    return { ...lease, attemptId };
  }

  /** A scenario whose lease is Active, its resource created by the simulated provider. */
  async function activeScenario(run: string) {
    const s = await setupScenario(h, { run });
    const lease = await provision(s);
    expect(await runAttempt(runner(), lease.attemptId, AbortSignal.timeout(5_000))).toBe(true);
    const current = await readCurrentLease(h.db, s.environmentId);
    expect(current?.state).toBe('Active');
    return { s, lease, resourceId: current?.resource?.resourceId ?? '' };
  }

  const reportFor = (
    s: Scenario,
    lease: Lease,
    resourceId: string,
    overrides: Partial<ProviderReport> = {},
  ): ProviderReport => ({
    providerId: 'simulated',
    // Report keys are global: one per scenario, so the tests sharing this database never collide.
    reportId: `report-${s.environmentId}`,
    environmentId: s.environmentId,
    operationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    resourceId,
    kind: 'terminated',
    observedAt: '2030-01-02T03:04:00.000Z',
    ...overrides,
  });

  it('the route answers 503 provider-reports-unavailable to anything, reads nothing and writes nothing', async () => {
    const { s, lease, resourceId } = await activeScenario('run-route');
    const before = await environmentRows(h.db, s.environmentId);
    const body = reportFor(s, lease, resourceId);
    const attempts = [
      { token: s.token, body },
      { body },
      { token: await h.token('acme', 'ops', { operator: true }), body },
      { token: s.token, body: '{"not json', contentType: 'application/json' },
      { token: 'not-a-token', body: 'kind=terminated', contentType: 'application/x-www-form-urlencoded' },
      {},
    ];
    for (const options of attempts) {
      const res = await h.request('POST', '/internal/provider-lifecycle/reports', options);
      expect(res.status).toBe(503);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const problem = await problemOf(res);
      expect(problem).toMatchObject({
        type: 'urn:sandlot:problem:provider-reports-unavailable',
        title: 'Provider reports unavailable',
        status: 503,
        missing: ['provider identity authentication', 'Core interruption acknowledgement'],
      });
      expect(problem.detail).toContain('provider identity authentication');
      expect(problem.detail).toContain('Core interruption acknowledgement');
    }
    expect(await reportRows()).toBe(0);
    expect(await environmentRows(h.db, s.environmentId)).toEqual(before);
  });

  it('the route answers 503 to hostile bodies, content types and tokens alike, and writes nothing', async () => {
    const count = await reportRows();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 2_000 }), fc.json({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 3 })),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'a/b; x'),
        fc.option(
          fc.string({ minLength: 1, maxLength: 80 }).map((t) => t.replace(/[^\x21-\x7e]/g, '') || 'x'),
        ),
        async (body, contentType, token) => {
          const res = await h.request('POST', '/internal/provider-lifecycle/reports', {
            body: typeof body === 'string' ? body : JSON.stringify(body),
            contentType,
            ...(token === null ? {} : { token }),
          });
          expect(res.status).toBe(503);
          expect((await problemOf(res)).type).toBe('urn:sandlot:problem:provider-reports-unavailable');
        },
      ),
      { numRuns: 40 },
    );
    expect(await reportRows()).toBe(count);
  });

  it('a report matching the Active lease is applied: it asks for an exact describe and releases nothing', async () => {
    const { s, lease, resourceId } = await activeScenario('run-applied');
    const before = await environmentRows(h.db, s.environmentId);
    const leaseBefore = await readCurrentLease(h.db, s.environmentId);

    const { replayed, record } = await recordReport(deps(), reportFor(s, lease, resourceId), received);

    expect(replayed).toBe(false);
    expect(record).toMatchObject({
      providerId: 'simulated',
      reportId: `report-${s.environmentId}`,
      environmentId: s.environmentId,
      kind: 'terminated',
      outcome: 'applied',
      lease: { resourceGeneration: 1, providerFence: 1, state: 'Active', revision: leaseBefore?.revision },
      eventType: 'sandbox.describe',
      eventRevision: before.revision + 1,
      receivedAt: received,
      observedAt: new Date('2030-01-02T03:04:00.000Z'),
    });
    expect(record.bodyDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(await readReportsOf(h.db, s.environmentId)).toEqual([record]);

    // The record and the event committed together: one journal row, one describe attempt.
    const after = await environmentRows(h.db, s.environmentId);
    expect(after.revision).toBe(before.revision + 1);
    expect(after.journal).toBe(before.journal + 1);
    const opened = after.attempts.filter((a) => !before.attempts.some((b) => b.attemptId === a.attemptId));
    expect(opened).toMatchObject([{ kind: 'describe', state: 'Pending' }]);
    // Nothing released: the lease is Active with the same fences, and no release attempt exists.
    expect(mutableRows(after).leases).toEqual(before.leases);
    expect(after.attempts.some((a) => a.kind === 'release')).toBe(false);
    const { rows: journal } = await h.db.query<{ eventType: string; actor: string }>(
      `SELECT event_type AS "eventType", actor FROM environment_journal
        WHERE environment_id = $1 AND revision = $2`,
      [s.environmentId, record.eventRevision],
    );
    expect(journal).toEqual([{ eventType: 'sandbox.describe', actor: 'provider:simulated' }]);

    // The exact describe decides: the resource is there, so the lease stays Active.
    expect(await runAttempt(runner(), opened[0]?.attemptId ?? '', AbortSignal.timeout(5_000))).toBe(true);
    expect((await readCurrentLease(h.db, s.environmentId))?.state).toBe('Active');
    expect(await h.provider.countResources({ operationId: lease.operationId })).toBe(1);
  });

  it('a replay returns the saved record and changes nothing; another body under the same key is refused', async () => {
    const { s, lease, resourceId } = await activeScenario('run-replay');
    const report = reportFor(s, lease, resourceId);
    const first = await recordReport(deps(), report, received);
    const rows = await environmentRows(h.db, s.environmentId);

    // Same body (keys in another order), later: the saved outcome back, with nothing sent again.
    const reordered = Object.fromEntries(Object.entries(report).reverse()) as ProviderReport;
    const replay = await recordReport(deps(), reordered, new Date(received.getTime() + 60_000));
    expect(replay).toEqual({ replayed: true, record: first.record });
    expect(await environmentRows(h.db, s.environmentId)).toEqual(rows);

    for (const changed of [
      { kind: 'interrupted' as const },
      { observedAt: '2030-01-02T03:04:01.000Z' },
      { providerFence: 2 },
    ]) {
      await expect(recordReport(deps(), { ...report, ...changed }, received)).rejects.toBeInstanceOf(
        ProviderReportConflictError,
      );
    }
    await expect(recordReport(deps(), { ...report, kind: 'relocated' }, received)).rejects.toMatchObject({
      code: 'provider-report-conflict',
      status: 409,
    });
    expect(await environmentRows(h.db, s.environmentId)).toEqual(rows);
    expect(await readReportsOf(h.db, s.environmentId)).toEqual([first.record]);
  });

  it('the same report from two processes at once is recorded once and feeds the machine once', async () => {
    const { s, lease, resourceId } = await activeScenario('run-race');
    const before = await environmentRows(h.db, s.environmentId);
    // Another pool and runtime: a second process, serialised with this one by the database lock only.
    const other = pg.open(2);
    const report = reportFor(s, lease, resourceId);

    const results = await Promise.all([
      recordReport(deps(), report, received),
      recordReport({ db: other, runtime: createEnvironmentRuntime(other) }, report, received),
    ]);

    expect(results.map((r) => r.replayed).sort()).toEqual([false, true]);
    expect(results[0]?.record).toEqual(results[1]?.record);
    const after = await environmentRows(h.db, s.environmentId);
    expect(after.revision).toBe(before.revision + 1);
    expect(after.attempts.filter((a) => a.kind === 'describe')).toHaveLength(
      before.attempts.filter((a) => a.kind === 'describe').length + 1,
    );
    expect(await readReportsOf(h.db, s.environmentId)).toHaveLength(1);
  });

  it.each([
    ['stale-fence', 'another provider fence', { providerFence: 2 }],
    ['not-current', 'an older resource generation', { resourceGeneration: 2, providerFence: 2 }],
    ['not-current', 'another operation', { operationId: 'op_someoneelse' }],
    ['not-current', 'another provider', { providerId: 'agent-sandbox' }],
    ['not-current', 'another resource', { resourceId: 'sim-somewhere-else' }],
  ] as const)('a report is %s when it names %s, and nothing else changes', async (outcome, _what, change) => {
    const { s, lease, resourceId } = await activeScenario(`run-${outcome}-${Object.keys(change).join('-')}`);
    const before = await environmentRows(h.db, s.environmentId);

    const { replayed, record } = await recordReport(
      deps(),
      reportFor(s, lease, resourceId, change),
      received,
    );

    expect(replayed).toBe(false);
    expect(record).toMatchObject({
      outcome,
      lease: { resourceGeneration: 1, providerFence: 1, state: 'Active' },
      eventType: null,
      eventRevision: null,
    });
    expect(await environmentRows(h.db, s.environmentId)).toEqual(before);
    expect(await readReportsOf(h.db, s.environmentId)).toEqual([record]);
  });

  it('a report for an Environment without a current lease is no-lease and changes nothing', async () => {
    const s = await setupScenario(h, { run: 'run-no-lease' });
    const before = await environmentRows(h.db, s.environmentId);
    const lease = { operationId: 'op_never', resourceGeneration: 1, providerFence: 1 };

    const { record } = await recordReport(deps(), reportFor(s, lease, 'sim-never'), received);

    expect(record).toMatchObject({ outcome: 'no-lease', lease: null, eventType: null, eventRevision: null });
    expect(await environmentRows(h.db, s.environmentId)).toEqual(before);
  });

  it('a matching report while the lease is Provisioning is applied but sends nothing: its call decides', async () => {
    const s = await setupScenario(h, { run: 'run-provisioning' });
    const lease = await provision(s);
    const before = await environmentRows(h.db, s.environmentId);

    const { record } = await recordReport(deps(), reportFor(s, lease, 'sim-unknown'), received);

    expect(record).toMatchObject({
      outcome: 'applied',
      lease: { state: 'Provisioning' },
      eventType: null,
      eventRevision: null,
    });
    expect(await environmentRows(h.db, s.environmentId)).toEqual(before);
  });

  it('a matching report while the lease awaits reconciliation opens the exact owner listing', async () => {
    const s = await setupScenario(h, { run: 'run-reconcile' });
    const lease = await provision(s);
    const begun = await beginAttempt(runner(), lease.attemptId, 5_000);
    expect(begun.dispatch).toBe(true);
    await completeAttempt(runner(), lease.attemptId, {
      state: 'Unknown',
      error: { code: 'timeout', message: 'the call timed out' },
    });
    expect((await readCurrentLease(h.db, s.environmentId))?.state).toBe('ReconciliationRequired');
    const before = await environmentRows(h.db, s.environmentId);

    const { record } = await recordReport(
      deps(),
      reportFor(s, lease, 'sim-unknown', { kind: 'interrupted' }),
      received,
    );

    expect(record).toMatchObject({
      outcome: 'applied',
      lease: { state: 'ReconciliationRequired' },
      eventType: 'sandbox.reconcile',
      eventRevision: before.revision + 1,
    });
    const after = await environmentRows(h.db, s.environmentId);
    const opened = after.attempts.filter((a) => !before.attempts.some((b) => b.attemptId === a.attemptId));
    expect(opened).toMatchObject([{ kind: 'listOwned', state: 'Pending' }]);
    expect(after.leases).toEqual(before.leases);
    // A second report while that listing is open: recorded, asked for, ignored by the machine.
    const second = await recordReport(
      deps(),
      reportFor(s, lease, 'sim-unknown', { reportId: `second-${s.environmentId}` }),
      received,
    );
    expect(second.record).toMatchObject({
      outcome: 'applied',
      eventType: 'sandbox.reconcile',
      eventRevision: null,
    });
    expect(await environmentRows(h.db, s.environmentId)).toEqual(after);
  });

  it('a report for an Environment that does not exist records nothing', async () => {
    const count = await reportRows();
    const ghost = { environmentId: 'env_' + 'a'.repeat(32) } as Scenario;
    const lease = { operationId: 'op_ghost', resourceGeneration: 1, providerFence: 1 };
    await expect(
      recordReport(deps(), reportFor(ghost, lease, 'sim-ghost', { reportId: 'ghost-1' }), received),
    ).rejects.toBeInstanceOf(EnvironmentNotFoundError);
    expect(await reportRows()).toBe(count);
  });
});
