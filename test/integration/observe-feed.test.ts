// The observer follows the provider's change feed: a sandbox whose run finished is described and
// retired at once, with no observer pass and no describe of any other lease; the feed is a hint
// only (the retirement goes through an exact describe attempt), and the pass becomes a slow resync
// that skips leases described within SANDLOT_OBSERVE_RESYNC_MS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { markSimulatedResourceFinished } from '../../store/simulated-resources.ts';
import { attemptRunner } from '../../workers/effect-processor.ts';
import { runnerDeps } from '../../workers/host.ts';
import { observeOnce } from '../../workers/observer.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { eventually } from '../support/sandbox-scenarios.ts';
import { provisionMany } from '../support/sandbox-flow.ts';

const LEASES = 12;

describe('observer change feed', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  const leases: { environmentId: string; operationId: string; resourceId: string }[] = [];

  beforeAll(async () => {
    pg = await isolatedPostgres();
    // No pass runs during the test (10 min period): only the feed can retire the lease.
    h = await buildHarness(pg.open(), { workers: { observeEveryMs: 600_000, concurrency: 8 } });
    await provisionMany(h, LEASES);
    await eventually(
      'every lease Active',
      async () => {
        const { rows } = await h.db.query<(typeof leases)[number]>(
          `SELECT environment_id AS "environmentId", operation_id AS "operationId",
                  resource->>'resourceId' AS "resourceId"
             FROM sandbox_leases WHERE state = 'Active' ORDER BY environment_id`,
        );
        if (rows.length < LEASES) return undefined;
        leases.push(...rows);
        return true;
      },
      60_000,
    );
  }, 120_000);
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  const describes = async (operationId: string) =>
    (
      await h.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM provider_attempts WHERE operation_id = $1 AND kind = 'describe'`,
        [operationId],
      )
    ).rows[0]?.n ?? 0;

  it('retires a finished sandbox through one exact describe, describing no other lease', async () => {
    const finished = leases[5]!;
    const before = await Promise.all(leases.map((l) => describes(l.operationId)));
    const marked = await markSimulatedResourceFinished(h.db, finished.resourceId, { reason: 'PodSucceeded' });
    expect(marked).toBe(true);
    await eventually(
      'the finished lease Released',
      async () => {
        const { rows } = await h.db.query<{ state: string }>(
          'SELECT state FROM sandbox_leases WHERE operation_id = $1',
          [finished.operationId],
        );
        return rows[0]?.state === 'Released' ? true : undefined;
      },
      60_000,
    );
    const after = await Promise.all(leases.map((l) => describes(l.operationId)));
    // The finished one was described (the retirement is the describe's answer, not the feed's)...
    expect(after[5]).toBeGreaterThan(before[5]!);
    const { rows } = await h.db.query<{ state: string; receipt: { finished?: unknown } }>(
      `SELECT state, receipt FROM provider_attempts WHERE operation_id = $1 AND kind = 'describe'
        ORDER BY created_at DESC LIMIT 1`,
      [finished.operationId],
    );
    expect(rows[0]).toMatchObject({ state: 'Succeeded', receipt: { finished: 'PodSucceeded' } });
    // ... and nothing else was.
    expect(after.filter((_, i) => i !== 5)).toEqual(before.filter((_, i) => i !== 5));
    const active = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM sandbox_leases WHERE state = 'Active'`,
    );
    expect(active.rows[0]?.n).toBe(LEASES - 1);
  }, 90_000);

  it('makes the pass a resync: leases described or changed within the window are left alone', async () => {
    const deps = runnerDeps(
      { db: h.db, runtime: h.runtime, provider: h.provider, logger: createLogger({ level: 'silent' }) },
      5_000,
    );
    const passes = { ...deps, runner: attemptRunner(deps), describeTimeoutMs: 5_000 };
    const described = async () =>
      (
        await h.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM provider_attempts WHERE kind = 'describe'`,
        )
      ).rows[0]?.n ?? 0;
    const start = await described();
    // Every lease went Active (or was described) within the last ten minutes: nothing to resync.
    await observeOnce({ ...passes, resyncMs: 600_000 });
    expect(await described()).toBe(start);
    // A window that every lease is past: the pass takes them all.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await observeOnce({ ...passes, resyncMs: 1 });
    const once = await described();
    expect(once - start).toBe(LEASES - 1);
    // All of them were just described: a pass with the long window describes none again.
    await observeOnce({ ...passes, resyncMs: 600_000 });
    expect(await described()).toBe(once);
    // With no window (no change feed), every pass takes the least recently observed again.
    await observeOnce(passes);
    expect(await described()).toBe(once + LEASES - 1);
  }, 90_000);

  it('does not report a provision or a renewal, only a finish or a delete', async () => {
    const provider = h.provider;
    const seen: string[] = [];
    const controller = new AbortController();
    const following = provider.followChanges((ids) => seen.push(...ids), { signal: controller.signal });
    const target = leases[7]!;
    await markSimulatedResourceFinished(h.db, target.resourceId, { reason: 'PodFailed' });
    await eventually(
      'the finish reported',
      () => Promise.resolve(seen.includes(target.resourceId) ? true : undefined),
      30_000,
    );
    controller.abort();
    await following;
    // Only that one: the other leases' resources were written (provisioned) but never finished.
    expect(new Set(seen)).toEqual(new Set([target.resourceId]));
  }, 60_000);
});
