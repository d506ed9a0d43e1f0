// Chaos: Redis loses everything in the middle of 200 provisions. PostgreSQL is the only source of
// truth and the outbox relay re-publishes every attempt no worker acknowledged, so all 200 leases
// must still reach Active, with exactly one live provider resource each.
//
// The flush is FLUSHDB on Redis logical db 6, which stands for FLUSHALL here: it empties every key
// this test's API and workers use (they live on db 6 only) while leaving db 0, db 5 and db 7 to the
// test files vitest may be running in parallel. A real FLUSHALL would wipe their queues too.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../store/db.ts';
import { uniquePrefix, waitFor } from '../integration/workers-support.ts';
import {
  countActive,
  leaseStates,
  mapLimit,
  registerAndProvision,
  seedFleetProject,
  type Provisioned,
} from '../support/chaos-fleet.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';

const FLUSHED_DB = 6;
const REDIS_URL = `${process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379'}/${FLUSHED_DB}`;
const ENVIRONMENTS = 200;
const FLUSH_AT_ACTIVE = 50;
const CONCURRENCY = 20;

async function scalar(db: Database, sql: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql);
  return rows[0]?.n ?? -1;
}

describe(`chaos: Redis db ${FLUSHED_DB} flushed in the middle of ${ENVIRONMENTS} provisions`, () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let redis: Redis;
  const prefix = uniquePrefix().replace('sandlot-test-', 'chaos-flush-');

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(30), { workers: { redisUrl: REDIS_URL, prefix } });
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    await h?.close();
    await pg?.drop();
    // Everything on db 6 is this file's; leave it empty for the next run.
    await redis?.flushdb();
    redis?.disconnect();
  });

  it(`brings all ${ENVIRONMENTS} leases to Active with ${ENVIRONMENTS} live resources`, async () => {
    const fleet = await seedFleetProject(h);
    const started = performance.now();
    let failure: unknown;
    const issuing = mapLimit(
      Array.from({ length: ENVIRONMENTS }, (_, i) => `env-${i}`),
      CONCURRENCY,
      (key) => registerAndProvision(h, fleet, key),
    ).catch((error: unknown) => {
      failure = error;
      return [] as Provisioned[];
    });

    // Flush once the first 50 are Active, while the rest are queued, running or not yet issued.
    await waitFor(async () => failure !== undefined || (await countActive(h.db)) >= FLUSH_AT_ACTIVE, {
      timeoutMs: 60_000,
      intervalMs: 5,
      what: `${FLUSH_AT_ACTIVE} Active leases`,
    });
    expect(failure).toBeUndefined();
    expect(await redis.dbsize()).toBeGreaterThan(0);
    await redis.flushdb();
    const flushedAt = performance.now();
    const atFlush = await leaseStates(h.db);
    // Attempts whose job was waiting in Redis (or about to be added) when it vanished.
    const pendingAtFlush = await scalar(
      h.db,
      `SELECT count(*)::int AS n FROM provider_attempts WHERE state = 'Pending'`,
    );
    expect(atFlush['Active'] ?? 0).toBeLessThan(ENVIRONMENTS);

    const provisioned = await issuing;
    expect(failure).toBeUndefined();
    expect(provisioned).toHaveLength(ENVIRONMENTS);

    let last: Record<string, number> = {};
    await waitFor(
      async () => {
        last = await leaseStates(h.db);
        return last['Active'] === ENVIRONMENTS;
      },
      {
        timeoutMs: 90_000,
        intervalMs: 50,
        what: `all ${ENVIRONMENTS} Active (last ${JSON.stringify(last)})`,
      },
    );
    const done = performance.now();
    console.log(
      `redis-flush: ${ENVIRONMENTS} Active in ${Math.round(done - started)} ms ` +
        `(flushed at ${Math.round(flushedAt - started)} ms with leases ${JSON.stringify(atFlush)} ` +
        `and ${pendingAtFlush} attempts Pending; ` +
        `${Math.round(done - flushedAt)} ms from flush to all Active)`,
    );

    expect(await leaseStates(h.db)).toEqual({ Active: ENVIRONMENTS });
    expect(await h.provider.countResources({})).toBe(ENVIRONMENTS);
    expect(await h.provider.countResources({ includeDeleted: true })).toBe(ENVIRONMENTS);
    // One resource per lease's operation, and no attempt left unresolved.
    expect(
      await scalar(
        h.db,
        `SELECT count(*)::int AS n FROM sandbox_leases l
           JOIN simulated_resources r ON r.operation_id = l.operation_id AND NOT r.deleted
          WHERE l.state = 'Active'`,
      ),
    ).toBe(ENVIRONMENTS);
    // Every attempt is settled in the end. A listOwned opened for a lease that its own late result
    // then made Active is superseded by the worker once the relay re-publishes it: allow for that.
    const unresolved = () =>
      scalar(
        h.db,
        `SELECT count(*)::int AS n FROM provider_attempts WHERE state IN ('Pending', 'Dispatched', 'Unknown')`,
      );
    await waitFor(async () => (await unresolved()) === 0, {
      timeoutMs: 20_000,
      what: 'no unresolved attempt',
    });
  }, 120_000);

  // A flush (or a Redis restart without persistence) deletes the reconciler's job scheduler; every
  // process re-asserts it on a timer, so a lease in ReconciliationRequired still recovers.
  it('keeps reconciling after the flush (a lease that needs listOwned reaches Active)', async () => {
    const fleet = await seedFleetProject(h, { run: 'run-after-flush' });
    await redis.flushdb();
    // The provision writes its resource, then hangs past its 2 s deadline: Unknown, then
    // ReconciliationRequired, which only the reconciler's exact listOwned can settle.
    h.provider.injectFault('provision', 'timeout-after-apply');
    const { operationId } = await registerAndProvision(h, fleet, 'needs-reconcile');
    const stateOf = async () =>
      (
        await h.db.query<{ state: string }>('SELECT state FROM sandbox_leases WHERE operation_id = $1', [
          operationId,
        ])
      ).rows[0]?.state;
    await waitFor(async () => (await stateOf()) === 'ReconciliationRequired', {
      timeoutMs: 10_000,
      what: 'ReconciliationRequired',
    });
    // The reconciler runs every 200 ms in the harness: 5 s is ample.
    await waitFor(async () => (await stateOf()) === 'Active', { timeoutMs: 5_000, what: 'Active' });
  }, 30_000);
});
