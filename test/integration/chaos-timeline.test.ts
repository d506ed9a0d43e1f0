// The chaos verdict's whole-run checks on real runs of the runtime (HTTP, actors, workers, the
// simulated provider's table and its late-resource fault), not on constructed intervals. A clean
// lifecycle gives no finding (the provider's deletion and the journal's Released row are on the same
// clock, in that order). Then E14's two scenarios, which on the code before items 1 and 2 were fixed ran like this:
//   item 1: a provision whose create lands only after its call timed out is Unknown; the lease is
//     abandoned; the release's exact listing comes back empty (the create has not landed yet) and
//     settles the Unknown provision, so POST …/release answers 200 Released; then the create lands:
//     released-while-live;
//   item 2: the reconciler's retry of that provision is refused before any call (the network policy
//     moved on), which settles the Unknown create; the lease fails and the volume detaches; a new
//     lease attaches the same volume; then the old create lands: volume-double-mounted.
// With items 1 and 2 fixed, those two runs no longer get that far (release is blocked, the volume
// stays held), and their cases are the opposite check: no finding at the end. The findings
// themselves are asserted on constructed intervals in test/unit/chaos-timeline.test.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newRecord } from '../../chaos/driver.ts';
import { planLifecycle } from '../../chaos/lifecycle.ts';
import { answeredReleased, journalReleased, simulatedLifetimes } from '../../chaos/timeline-sources.ts';
import { releasedWhileLive, volumeDoubleMounts } from '../../chaos/timeline.ts';
import { createLogger } from '../../lib/logger.ts';
import { simulatedResourceId } from '../../providers/simulated/simulated-provider.ts';
import { runnerDeps, type WorkerHost } from '../../workers/host.ts';
import { reconcileOnce } from '../../workers/reconciler.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
  type Scenario,
} from '../support/sandbox-flow.ts';
import { eventually, startWorkersWith } from '../support/sandbox-scenarios.ts';

const CALL_TIMEOUT_MS = 1_000;
const logger = createLogger({ level: 'silent' });
/** Long past the call's deadline, and long enough for what each case does before the create lands. */
const LAND_MS = 5_000;

describe('the whole-run check on the real runtime', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let s: Scenario;
  let workers: WorkerHost | undefined;

  beforeEach(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { workers: false });
    s = await setupScenario(h);
  });
  afterEach(async () => {
    await workers?.close();
    workers = undefined;
    await h.close();
    await pg.drop();
  });

  async function provision(body: ReturnType<typeof provisionBody>): Promise<string> {
    const res = await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body });
    expect(res.status).toBe(202);
    return (await json<{ operationId: string }>(res)).operationId;
  }

  /**
   * The next provision's create lands LAND_MS after its call timed out; workers run with no
   * reconciler pass of their own. Returns when the fault was armed.
   */
  async function armLateCreate(): Promise<number> {
    h.provider.injectFault('provision', 'late-resource', LAND_MS);
    const armedAt = Date.now();
    workers = await startWorkersWith(h, h.provider, {
      callTimeoutMs: CALL_TIMEOUT_MS,
      reconcileEveryMs: 600_000,
    });
    return armedAt;
  }

  it('takes the first Released journal row by revision number (revision 999 before 1000)', async () => {
    const row = (revision: number, at: string) =>
      h.db.query(
        `INSERT INTO environment_journal (environment_id, revision, event_type, event, to_state, actor, recorded_at)
         VALUES ($1, $2, 'cleanup.sweep', '{}', '{"lifecycle":"Released"}', 'test', $3)`,
        [s.environmentId, revision, at],
      );
    await row(1000, '2026-12-01T05:17:12.000001Z');
    await row(999, '2026-12-01T05:17:11.000001Z');
    expect(await journalReleased(h.db)).toEqual([
      {
        environmentId: s.environmentId,
        atMs: Date.parse('2026-12-01T05:17:11.000Z') + 0.001,
        source: 'journal revision 999 (cleanup.sweep)',
      },
    ]);
  });

  it('finds nothing in a clean lifecycle: provision, Active, release, Released', async () => {
    workers = await startWorkersWith(h, h.provider, { callTimeoutMs: CALL_TIMEOUT_MS });
    const operationId = await provision(provisionBody(s));
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    const res = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-1' },
    });
    expect([200, 202]).toContain(res.status);
    await waitForLifecycle(h, s, 'Released');

    const resources = await simulatedLifetimes(h.db);
    const moments = await journalReleased(h.db);
    expect(resources.map((r) => [r.resource, r.deletedAtMs !== null])).toEqual([
      [simulatedResourceId(operationId), true],
    ]);
    expect(resources[0]!.deletedAtMs).toBeLessThan(moments[0]!.atMs);
    expect(releasedWhileLive(resources, moments)).toEqual([]);
    expect(volumeDoubleMounts(resources)).toEqual([]);
  });

  /** Reconcile passes (with workers running the effects) until the lease is Released. */
  async function reconcileUntilReleased(): Promise<void> {
    const deps = runnerDeps(
      { db: h.db, runtime: h.runtime, provider: h.provider, logger, networkPolicies: h.networkPolicies },
      CALL_TIMEOUT_MS,
    );
    await eventually(
      'the lease to be Released',
      async () => {
        await reconcileOnce({ ...deps, logger, lateSweepMs: 3_600_000 });
        const res = await h.request('GET', `${s.base}/sandbox`, { token: s.token });
        const { lease } = await json<{ lease: Record<string, unknown> }>(res);
        return lease['state'] === 'Released' ? true : undefined;
      },
      30_000,
    );
  }

  const releaseEnvironment = () =>
    h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-1' },
    });

  // Before E14 items 1-2 this run reported released-while-live: the release's empty listing settled
  // the Unknown create, POST …/release answered 200, and the create landed afterwards.
  it('finds nothing when a timed-out create lands after an abandon: release waits until it is found and released', async () => {
    await armLateCreate();
    const operationId = await provision(provisionBody(s));
    const lease = await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
    const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
      token: s.token,
      body: {
        resourceGeneration: lease['resourceGeneration'],
        providerFence: lease['providerFence'],
        idempotencyKey: 'abandon-1',
      },
    });
    expect(abandoned.status).toBe(202);
    await waitForLease(h, s, (l) => (l['failure'] as { code?: string } | null)?.code === 'release-unsettled');
    expect((await releaseEnvironment()).status).toBe(409);
    await eventually('the late create', async () =>
      (await h.provider.countResources({ operationId })) === 1 ? true : undefined,
    );
    await reconcileUntilReleased();
    const released = await releaseEnvironment();
    expect(released.status).toBe(200);
    const record = {
      ...newRecord(0, planLifecycle(1, 0)),
      environmentId: s.environmentId,
      releasedAnswer: { atMs: Date.now(), what: 'POST …/release 200 (api-0)' },
    };
    const moments = [...(await journalReleased(h.db)), ...answeredReleased([record])];
    expect(releasedWhileLive(await simulatedLifetimes(h.db), moments)).toEqual([]);
  });

  // Before E14 items 1-2 this run reported volume-double-mounted: the refused retry settled the
  // Unknown create, the volume detached, a second lease took it, and the old create landed beside it.
  it('finds nothing when a refused retry follows a timed-out create: the volume stays held, no second lease', async () => {
    await armLateCreate();
    const first = await provision(provisionBody(s));
    await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
    // The project's policy moves on to generation 2: a retry naming generation 1 is refused before
    // any call is made.
    const operator = await h.token('acme', 'ops', { operator: true });
    const policy = await h.request('PUT', '/admin/tenants/acme/projects/checkout/network-policies/2', {
      token: operator,
      body: { policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] } },
    });
    expect(policy.status).toBe(201);
    const deps = runnerDeps(
      { db: h.db, runtime: h.runtime, provider: h.provider, logger, networkPolicies: h.networkPolicies },
      CALL_TIMEOUT_MS,
    );
    await reconcileOnce({ ...deps, logger, lateSweepMs: 3_600_000 });
    await waitForLease(
      h,
      s,
      (l) =>
        l['operationId'] === first &&
        l['state'] === 'ReconciliationRequired' &&
        (l['failure'] as { code?: string } | null)?.code === 'network-policy-unverified',
    );
    const second = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: { ...provisionBody(s, 'prov-2'), networkPolicyGeneration: 2 },
    });
    expect(second.status).toBe(409);
    await eventually('the late create', async () =>
      (await h.provider.countResources({ operationId: first })) === 1 ? true : undefined,
    );
    expect(volumeDoubleMounts(await simulatedLifetimes(h.db))).toEqual([]);
  });
});
