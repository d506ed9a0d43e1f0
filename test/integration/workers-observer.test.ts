// The observer reaches every Active lease: with more Active leases than one pass describes, it takes
// them least recently observed first, so a sandbox that finishes anywhere in the list is retired
// within a few passes (it used to describe the same first 100 forever).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { attemptRunner } from '../../workers/effect-processor.ts';
import { runnerDeps } from '../../workers/host.ts';
import { observeOnce } from '../../workers/observer.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { eventually } from '../support/sandbox-scenarios.ts';
import { provisionMany } from '../support/sandbox-flow.ts';

const LEASES = 150;
const BATCH = 100;

describe('observer ordering', () => {
  let pg: IsolatedPostgres;
  let h: Harness;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), {
      // The passes alone: the change feed would retire the finished lease before they look.
      workers: { observeEveryMs: 600_000, concurrency: 8, followChanges: false },
    });
  });
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  const activeCount = async () =>
    (await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM sandbox_leases WHERE state = 'Active'`))
      .rows[0]?.n ?? 0;

  it(`retires the last of ${LEASES} Active leases within two passes of ${BATCH}`, async () => {
    await provisionMany(h, LEASES);
    await eventually(
      'every lease Active',
      async () => ((await activeCount()) === LEASES ? true : undefined),
      60_000,
    );

    const deps = runnerDeps(
      { db: h.db, runtime: h.runtime, provider: h.provider, logger: createLogger({ level: 'silent' }) },
      2_000,
    );
    const observer = { ...deps, runner: attemptRunner(deps), describeTimeoutMs: 2_000, batchSize: BATCH };
    // One pass over all of them first, so every recorded phase is current and later passes change
    // no lease row: an order by last update would then describe the same first 100 every time.
    expect(await observeOnce({ ...observer, batchSize: LEASES })).toBe(0);

    // The lease an order by last update reaches last of all.
    const { rows } = await h.db.query<{ environmentId: string; operationId: string }>(
      `SELECT environment_id AS "environmentId", operation_id AS "operationId" FROM sandbox_leases
        WHERE state = 'Active' ORDER BY updated_at DESC, environment_id DESC LIMIT 1`,
    );
    const last = rows[0]!;
    await h.db.query(
      `UPDATE simulated_resources SET finished = '{"reason":"PodSucceeded"}'::jsonb WHERE operation_id = $1`,
      [last.operationId],
    );

    const retired = [await observeOnce(observer), await observeOnce(observer)];
    expect(retired).toEqual([0, 1]);

    const lease = await h.db.query<{ state: string }>(
      'SELECT state FROM sandbox_leases WHERE operation_id = $1',
      [last.operationId],
    );
    expect(['Releasing', 'Released']).toContain(lease.rows[0]?.state);
    // Every other lease is still Active: retirement ended exactly the finished one.
    expect(await activeCount()).toBe(LEASES - 1);
  }, 120_000);
});
