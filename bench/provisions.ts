// Provisioning throughput: N Environments (register → Workspace → provision) driven to Active through
// the real HTTP app and workers over real PostgreSQL, once with the in-process effect queue and once
// with BullMQ + Redis, side by side in one run. Then every Environment is released to Released, and
// the commits one lifecycle costs are counted. Never part of `npm test`; see bench/README.md.
//
//   npx tsx bench/provisions.ts
//
// Settings (environment): BENCH_ENVIRONMENTS (200), BENCH_CLIENTS (20 HTTP requests in flight),
// BENCH_WORKER_CONCURRENCY (8, both transports), BENCH_POOL (10 connections, as `sandlot serve`),
// TEST_DATABASE_URL (postgres://postgres@127.0.0.1:5432/test), BENCH_REDIS_URL
// (redis://127.0.0.1:6379/0; keys under a unique prefix, deleted at the end).
import { randomBytes } from 'node:crypto';
import type { Database, Queryable, QueryResult } from '../store/db.ts';
import { deleteKeys } from '../test/integration/workers-support.ts';
import {
  mapLimit,
  percentile,
  registerAndProvision,
  seedFleetProject,
  type FleetProject,
} from '../test/support/chaos-fleet.ts';
import { isolatedPostgres } from '../test/support/databases.ts';
import { buildHarness, type Harness } from '../test/support/harness.ts';
import type { WorkerSettings } from '../workers/host.ts';

const intFromEnv = (name: string, fallback: number): number => {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};

const N = intFromEnv('BENCH_ENVIRONMENTS', 200);
const CLIENTS = intFromEnv('BENCH_CLIENTS', 20);
const CONCURRENCY = intFromEnv('BENCH_WORKER_CONCURRENCY', 8);
const POOL = intFromEnv('BENCH_POOL', 10);
const WARMUP = Math.min(20, N);
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379/0';
const TIMEOUT_MS = 180_000;

// Production defaults of `sandlot serve` / `sandlot worker` (the test harness polls faster).
const productionLike: WorkerSettings = {
  concurrency: CONCURRENCY,
  callTimeoutMs: 30_000,
  reconcileEveryMs: 5_000,
  republishAfterMs: 5_000,
  relayPollMs: 1_000,
};

interface WriteCounter {
  /** Committed transactions that wrote at least one control-plane row. */
  transactions: number;
  /** Writes outside any transaction (each its own commit). */
  autocommits: number;
  /** Commits by the first statement that wrote, e.g. `update outbox`. */
  byFirstWrite: Map<string, number>;
}

const WRITE = /^\s*(insert|update|delete)\b/i;
const TARGET = /^\s*(insert\s+into|update|delete\s+from)\s+(\w+)/i;
const targetOf = (sql: string): string => {
  const match = TARGET.exec(sql);
  return match === null ? 'other' : `${(match[1] ?? '').split(/\s+/)[0]?.toLowerCase()} ${match[2]}`;
};
const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
// The simulated provider keeps its "cluster" in the same database; those writes stand for the
// provider's own work, not for control-plane commits.
const isControlPlaneWrite = (sql: string): boolean => WRITE.test(sql) && !sql.includes('simulated_resources');

/** Counts control-plane commits made through `inner`. */
function countingDatabase(inner: Database, counter: WriteCounter): Database {
  return {
    kind: inner.kind,
    async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      const result = await inner.query<R>(sql, params);
      if (isControlPlaneWrite(sql)) {
        counter.autocommits++;
        bump(counter.byFirstWrite, `${targetOf(sql)} (autocommit)`);
      }
      return result;
    },
    exec: (sql) => inner.exec(sql),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      let first: string | undefined;
      const result = await inner.transaction((tx) =>
        fn({
          query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
            if (first === undefined && isControlPlaneWrite(sql)) first = targetOf(sql);
            return tx.query<R>(sql, params);
          },
          exec: (sql) => tx.exec(sql),
        }),
      );
      if (first !== undefined) {
        counter.transactions++;
        bump(counter.byFirstWrite, first);
      }
      return result;
    },
    close: () => inner.close(),
  };
}

async function waitUntil(what: string, condition: () => Promise<boolean>, intervalMs = 10): Promise<void> {
  const deadline = Date.now() + TIMEOUT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${TIMEOUT_MS} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

async function scalar(db: Queryable, sql: string, params: readonly unknown[] = []): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql, params);
  return rows[0]?.n ?? 0;
}

async function provisionFleet(h: Harness, fleet: FleetProject, keyPrefix: string, count: number) {
  const started = performance.now();
  const provisioned = await mapLimit(
    Array.from({ length: count }, (_, i) => `${keyPrefix}-${i}`),
    CLIENTS,
    (key) => registerAndProvision(h, fleet, key),
  );
  const runActive = () =>
    scalar(
      h.db,
      `SELECT count(*)::int AS n FROM sandbox_leases l JOIN environments e USING (environment_id)
        WHERE l.state = 'Active' AND e.run_id = $1`,
      [fleet.run],
    );
  await waitUntil(`${count} Active`, async () => (await runActive()) === count);
  return { provisioned, wallMs: performance.now() - started };
}

interface ModeResult {
  transport: string;
  wallMs: number;
  p50: number;
  p95: number;
  max: number;
  releaseWallMs: number;
  journalRows: { min: number; median: number; max: number; events: string };
  commitsPerLifecycle: number;
  /** Commits per lifecycle by the first table each wrote. */
  breakdown: string;
}

async function runMode(transport: 'in-process' | 'bullmq'): Promise<ModeResult> {
  const pg = await isolatedPostgres();
  const prefix = `bench-${randomBytes(5).toString('hex')}`;
  const counter: WriteCounter = { transactions: 0, autocommits: 0, byFirstWrite: new Map() };
  const db = countingDatabase(pg.open(POOL), counter);
  const h = await buildHarness(db, {
    workers: transport === 'bullmq' ? { ...productionLike, redisUrl: REDIS_URL, prefix } : productionLike,
  });
  try {
    // Warm-up on its own run: JIT, pool connections, Redis scripts. Not measured.
    const warm = await seedFleetProject(h, { run: 'run-warmup' });
    await provisionFleet(h, warm, 'warm', WARMUP);

    const fleet = await seedFleetProject(h, { run: 'run-bench' });
    const before = { ...counter, byFirstWrite: new Map(counter.byFirstWrite) };
    const { provisioned, wallMs } = await provisionFleet(h, fleet, 'env', N);

    // provision → Active per lease, on the database clock: the provision's commit (lease row
    // created) to the commit that made it Active (its last update, nothing touched it since).
    const { rows } = await h.db.query<{ ms: number }>(
      `SELECT extract(epoch FROM (l.updated_at - l.created_at)) * 1000 AS ms
         FROM sandbox_leases l JOIN environments e USING (environment_id)
        WHERE e.run_id = 'run-bench' AND l.state = 'Active'`,
    );
    const latencies = rows.map((row) => Number(row.ms)).sort((a, b) => a - b);

    const releaseStarted = performance.now();
    await mapLimit(provisioned, CLIENTS, async ({ base }) => {
      const res = await h.request('POST', `${base}/release`, {
        token: fleet.token,
        body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-1' },
      });
      if (res.status !== 202 && res.status !== 200) {
        throw new Error(`release ${base}: ${res.status} ${await res.text()}`);
      }
    });
    const releasedCount = () =>
      scalar(
        h.db,
        `SELECT count(*)::int AS n FROM environments e
          WHERE e.run_id = 'run-bench' AND e.lifecycle_state = 'Released'
            AND NOT EXISTS (SELECT 1 FROM provider_attempts a
                             WHERE a.environment_id = e.environment_id
                               AND a.state IN ('Pending', 'Dispatched', 'Unknown'))`,
      );
    await waitUntil(`${N} Released`, async () => (await releasedCount()) === N);
    const releaseWallMs = performance.now() - releaseStarted;
    const live = await scalar(
      h.db,
      `SELECT count(*)::int AS n FROM simulated_resources r
         JOIN sandbox_leases l USING (operation_id) JOIN environments e USING (environment_id)
        WHERE e.run_id = 'run-bench' AND NOT r.deleted`,
    );
    if (live !== 0) throw new Error(`${live} provider resources still live after release`);
    // Let stragglers (relay marks, outbox acknowledgements) land before counting commits.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const commits = counter.transactions - before.transactions + (counter.autocommits - before.autocommits);
    const breakdown = [...counter.byFirstWrite]
      .map(([key, n]): [string, number] => [key, (n - (before.byFirstWrite.get(key) ?? 0)) / N])
      .filter(([, perLifecycle]) => perLifecycle > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([key, perLifecycle]) => `${key} ${perLifecycle.toFixed(2)}`)
      .join(', ');

    const journal = await h.db.query<{ n: number; events: string }>(
      `SELECT count(*)::int AS n, string_agg(j.event_type, ' → ' ORDER BY j.revision) AS events
         FROM environment_journal j JOIN environments e USING (environment_id)
        WHERE e.run_id = 'run-bench' GROUP BY j.environment_id ORDER BY n`,
    );
    const counts = journal.rows.map((row) => row.n);
    const median = journal.rows[Math.floor(journal.rows.length / 2)];
    return {
      transport,
      wallMs,
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      max: latencies.at(-1) ?? Number.NaN,
      releaseWallMs,
      journalRows: {
        min: counts[0] ?? 0,
        median: median?.n ?? 0,
        max: counts.at(-1) ?? 0,
        events: median?.events ?? '',
      },
      commitsPerLifecycle: commits / N,
      breakdown,
    };
  } finally {
    await h.close();
    await pg.drop();
    if (transport === 'bullmq') await deleteKeys(REDIS_URL, prefix);
  }
}

const fmt = (ms: number) => ms.toFixed(0).padStart(8);

async function main(): Promise<void> {
  console.log(
    `${N} provisions to Active over PostgreSQL (one schema per transport), ${CLIENTS} clients, ` +
      `worker concurrency ${CONCURRENCY}, pool ${POOL}, warm-up ${WARMUP}`,
  );
  const results: ModeResult[] = [];
  for (const transport of ['in-process', 'bullmq'] as const) {
    results.push(await runMode(transport));
    // Just to make progress visible on a slow machine.
    console.log(`  ${transport} done`);
  }
  console.log('');
  console.log('transport     wall ms  provisions/s   p50 ms   p95 ms   max ms   release wall ms');
  for (const r of results) {
    console.log(
      `${r.transport.padEnd(11)} ${fmt(r.wallMs)}  ${((N / r.wallMs) * 1000).toFixed(1).padStart(12)} ` +
        `${fmt(r.p50)} ${fmt(r.p95)} ${fmt(r.max)}  ${fmt(r.releaseWallMs).padStart(16)}`,
    );
  }
  const [inProcess, bullmq] = results as [ModeResult, ModeResult];
  console.log('');
  console.log(
    `ratio bullmq / in-process: wall ×${(bullmq.wallMs / inProcess.wallMs).toFixed(2)}, ` +
      `p50 ×${(bullmq.p50 / inProcess.p50).toFixed(2)}, p95 ×${(bullmq.p95 / inProcess.p95).toFixed(2)}`,
  );
  console.log('');
  console.log('commits per lifecycle (register → workspace → provision → Active → release → Released):');
  for (const r of results) {
    const j = r.journalRows;
    console.log(
      `  ${r.transport.padEnd(11)} journal rows ${j.median} (min ${j.min}, max ${j.max}); ` +
        `control-plane write commits ${r.commitsPerLifecycle.toFixed(2)} (target ≤ 8)`,
    );
    console.log(`    by first write: ${r.breakdown}`);
  }
  console.log(`  journal: ${inProcess.journalRows.events}`);
}

await main();
