// Observation at scale (E15 target 4): the engine in this process (bench/lib/engine.ts, production
// worker settings: observer every 15 s, 100 leases a pass) holding `leases` Active leases on the
// simulated provider. Measured, in this order:
// - steady state: for `windowS` nothing changes; CPU of this process (API and workers) and of
//   PostgreSQL, write transactions, rows written (pg_stat_user_tables) and describe attempts, each
//   per minute per 1,000 Active leases;
// - retirement: `finish` of the sandboxes are marked finished (the simulated resource's `finished`,
//   as an agent that exited would leave it), 20 a second, and each is timed from its mark until its
//   lease is Released (read every 25 ms), for at most `retireTimeoutS`.
// With `feed: false` the workers do not follow the provider's change feed, so only the observer's
// passes can find a finished sandbox: the behaviour before the feed, side by side.
import { randomInt } from 'node:crypto';
import type { WorkerSettings } from '../../workers/host.ts';
import { openEngine, provisionEnvironment } from './engine.ts';
import { openProbe, type BenchDatabase } from './postgres.ts';
import { progress, status } from './progress.ts';
import { round, summarize, type Summary } from './stats.ts';
import { openWindow } from './window.ts';

export interface ObservationOptions {
  /** Active leases held (default 10,000). */
  leases?: number;
  /** Sandboxes marked finished in the retirement phase (default 100). */
  finish?: number;
  /** Length of the steady-state window, seconds (default 60). */
  windowS?: number;
  /** How long the retirement phase waits for the last lease, seconds (default 60). */
  retireTimeoutS?: number;
  /** Provisions in flight while filling (default 32). */
  clients?: number;
  /** Follow the provider's change feed (default true). */
  feed?: boolean;
  database?: BenchDatabase;
}

export interface ObservationResult {
  leases: number;
  feed: boolean;
  fillSeconds: number;
  steady: {
    windowS: number;
    /** Per minute per 1,000 Active leases. */
    cpuSecondsPerMinPer1000: { engine: number; postgres: number };
    writeTransactionsPerMinPer1000: number;
    rowsWrittenPerMinPer1000: number;
    describesPerMinPer1000: number;
  };
  retirement: {
    finished: number;
    retired: number;
    /** From the mark to the lease's Released, ms (only the retired ones). */
    retireMs: Summary | null;
    timeoutS: number;
  };
}

const production = (feed: boolean): WorkerSettings => ({
  concurrency: 8,
  callTimeoutMs: 30_000,
  reconcileEveryMs: 5_000,
  republishAfterMs: 5_000,
  relayPollMs: 1_000,
  observeEveryMs: 15_000,
  followChanges: feed,
});

const STATS_SETTLE_MS = 11_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runObservation(options: ObservationOptions = {}): Promise<ObservationResult> {
  const leases = options.leases ?? 10_000;
  const finish = Math.min(options.finish ?? 100, leases);
  const windowS = options.windowS ?? 60;
  const timeoutS = options.retireTimeoutS ?? 60;
  const feed = options.feed ?? true;
  const engine = await openEngine({
    ...(options.database === undefined ? {} : { database: options.database }),
    workers: production(feed),
  });
  const { h, database } = engine;
  const probe = await openProbe(database);
  try {
    status(`observation: filling ${leases} Active leases (feed ${feed ? 'on' : 'off'})`);
    const fillStarted = performance.now();
    await fill(h, leases, options.clients ?? 32);
    const fillSeconds = round((performance.now() - fillStarted) / 1000, 1);

    // The fill's last effects settle, and idle backends report their table counters (PostgreSQL
    // flushes them within 10 s), so the window counts only its own rows.
    await sleep(STATS_SETTLE_MS);
    status(`observation: ${windowS} s steady state with ${leases} Active leases`);
    const rowsBefore = await rowsWritten(h.db);
    const describesBefore = await describes(h.db);
    const window = await openWindow(probe, { fixed: {}, postgres: true });
    const cpuBefore = process.cpuUsage();
    await sleep(windowS * 1000);
    const cpu = process.cpuUsage(cpuBefore);
    const measured = await window.stop();
    await sleep(STATS_SETTLE_MS);
    const perMinPer1000 = (value: number) => round((value / (windowS / 60)) * (1000 / leases), 2);
    const steady = {
      windowS,
      cpuSecondsPerMinPer1000: {
        engine: perMinPer1000((cpu.user + cpu.system) / 1e6),
        postgres: perMinPer1000((measured.cpuMs['postgres'] ?? 0) / 1000),
      },
      writeTransactionsPerMinPer1000: perMinPer1000(measured.writeTransactions),
      rowsWrittenPerMinPer1000: perMinPer1000((await rowsWritten(h.db)) - rowsBefore),
      describesPerMinPer1000: perMinPer1000((await describes(h.db)) - describesBefore),
    };

    status(`observation: ${finish} sandboxes finish, 20 a second`);
    const retirement = await retire(h, finish, timeoutS);
    return { leases, feed, fillSeconds, steady, retirement };
  } finally {
    await probe.close();
    await engine.close();
  }
}

type Engine = Awaited<ReturnType<typeof openEngine>>;

async function fill(h: Engine['h'], n: number, clients: number): Promise<void> {
  const bar = progress('provisioning', n);
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(clients, n) }, async () => {
      while (next < n) {
        const index = next++;
        await provisionEnvironment(h, `observe-${index}`);
        bar.tick(++done);
      }
    }),
  );
  bar.done();
  // The provisions' effects run in the workers: wait until every lease is Active.
  const deadline = Date.now() + Math.max(120_000, n * 30);
  for (;;) {
    const active = await count(h.db, `SELECT count(*)::int AS n FROM sandbox_leases WHERE state = 'Active'`);
    if (active >= n) return;
    if (Date.now() > deadline) throw new Error(`only ${active} of ${n} leases Active in time`);
    await sleep(500);
  }
}

async function retire(
  h: Engine['h'],
  finish: number,
  timeoutS: number,
): Promise<ObservationResult['retirement']> {
  const { rows } = await h.db.query<{ resourceId: string }>(
    `SELECT resource->>'resourceId' AS "resourceId" FROM sandbox_leases WHERE state = 'Active'`,
  );
  // A random sample, so the observer's order (least recently observed first) is no help.
  for (let i = rows.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [rows[i], rows[j]] = [rows[j]!, rows[i]!];
  }
  const chosen = rows.slice(0, finish).map((r) => r.resourceId);
  const markedAt = new Map<string, number>();
  const retiredMs = new Map<string, number>();
  const marking = (async () => {
    for (const id of chosen) {
      await h.db.query(
        `UPDATE simulated_resources SET finished = '{"reason":"PodSucceeded"}'::jsonb WHERE resource_id = $1`,
        [id],
      );
      markedAt.set(id, performance.now());
      await sleep(50);
    }
  })();
  const until = performance.now() + (chosen.length * 50 + timeoutS * 1000);
  while (retiredMs.size < chosen.length && performance.now() < until) {
    const waiting = [...markedAt.keys()].filter((id) => !retiredMs.has(id));
    if (waiting.length > 0) {
      const { rows: released } = await h.db.query<{ resourceId: string }>(
        `SELECT resource->>'resourceId' AS "resourceId" FROM sandbox_leases
          WHERE state = 'Released' AND resource->>'resourceId' = ANY($1::text[])`,
        [waiting],
      );
      const now = performance.now();
      for (const { resourceId } of released) retiredMs.set(resourceId, now - markedAt.get(resourceId)!);
    }
    await sleep(25);
  }
  await marking;
  const times = [...retiredMs.values()];
  return {
    finished: chosen.length,
    retired: times.length,
    retireMs: times.length === 0 ? null : rounded(summarize(times)),
    timeoutS,
  };
}

const rounded = (s: Summary): Summary => ({
  n: s.n,
  mean: round(s.mean, 1),
  p50: round(s.p50, 1),
  p95: round(s.p95, 1),
  p99: round(s.p99, 1),
  max: round(s.max, 1),
});

async function count(db: Engine['h']['db'], sql: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql);
  return rows[0]?.n ?? 0;
}

/** Rows inserted, updated and deleted in this schema's tables so far. */
const rowsWritten = (db: Engine['h']['db']) =>
  count(
    db,
    `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int AS n FROM pg_stat_user_tables
      WHERE schemaname = current_schema()`,
  );

const describes = (db: Engine['h']['db']) =>
  count(db, `SELECT count(*)::int AS n FROM provider_attempts WHERE kind = 'describe'`);
