// Tables over a day of lifecycles (E15 target 5): the engine in this process (bench/lib/engine.ts)
// runs `rounds` rounds of `perRound` whole lifecycles; the rounds stand for the hours of a day, and
// the retention window for `keepRounds` of them. After each round one pruner pass runs
// (workers/pruner.ts), its clock set so that the Environments released before the round
// `keepRounds` back are past the window, and the rows of the tables that grow with lifecycles are
// counted. The outbox and the attempts should stop growing once the window is full; the journal
// should grow by two rows (the final transition and the summary) per lifecycle past the window;
// Environments and leases by one each (they are kept). Late sweeps run 100 ms apart so that the
// released leases are swept out (their attempts are kept until then) by the next pass.
import { createLogger } from '../../lib/logger.ts';
import { pruneOnce } from '../../workers/pruner.ts';
import { drive, openEngine } from './engine.ts';
import type { BenchDatabase } from './postgres.ts';
import { status } from './progress.ts';
import { round } from './stats.ts';

export interface RetentionOptions {
  rounds?: number;
  perRound?: number;
  keepRounds?: number;
  clients?: number;
  database?: BenchDatabase;
}

export const retentionTables = [
  'outbox',
  'environment_journal',
  'provider_attempts',
  'environments',
  'sandbox_leases',
] as const;
export type RetentionTable = (typeof retentionTables)[number];

export interface RetentionRound {
  round: number;
  lifecycles: number;
  rows: Record<RetentionTable, number>;
  /** What that round's pruner pass removed. */
  pruned: { outboxRows: number; journalRowsCompacted: number; attemptsCompacted: number };
}

export interface RetentionResult {
  rounds: RetentionRound[];
  perRound: number;
  keepRounds: number;
  failed: number;
  /**
   * Rows added per lifecycle per table between the first full-window round and the last: about 0
   * for the outbox and the attempts when they stay bounded.
   */
  growthPerLifecycle: Record<RetentionTable, number>;
  /** Rows added per lifecycle with no pruning, over the first `keepRounds` rounds. */
  unprunedPerLifecycle: Record<RetentionTable, number>;
}

const DAY_MS = 86_400_000;

export async function runRetention(options: RetentionOptions = {}): Promise<RetentionResult> {
  const rounds = options.rounds ?? 24;
  const perRound = options.perRound ?? 50;
  const keepRounds = options.keepRounds ?? 4;
  const clients = options.clients ?? 8;
  const engine = await openEngine({
    ...(options.database === undefined ? {} : { database: options.database }),
    workers: {
      concurrency: 8,
      callTimeoutMs: 30_000,
      reconcileEveryMs: 100,
      republishAfterMs: 5_000,
      relayPollMs: 1_000,
      lateSweepMs: 100,
      // The bench runs the passes itself, with its own clock.
      pruneEveryMs: 3_600_000,
    },
  });
  const { h } = engine;
  const logger = createLogger({ level: 'silent' });
  const count = async (table: RetentionTable) =>
    (await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n ?? 0;
  const counts = async () => {
    const rows = {} as Record<RetentionTable, number>;
    for (const table of retentionTables) rows[table] = await count(table);
    return rows;
  };
  try {
    const ends: number[] = [];
    const out: RetentionRound[] = [];
    let failed = 0;
    let done = 0;
    for (let r = 1; r <= rounds; r++) {
      status(`tables over a day: round ${r}/${rounds}, ${perRound} lifecycles`);
      const run = await drive(h, {
        n: perRound,
        clients,
        pollMs: 50,
        waitMs: 10_000,
        tag: `retention-${r}`,
        label: `round ${r}`,
      });
      failed += perRound - run.completed;
      done += run.completed;
      ends.push(Date.now());
      // Released before the round keepRounds back: past the window (one day of retention).
      const cutoff = ends[r - 1 - keepRounds];
      const pruned =
        cutoff === undefined
          ? { outboxRows: 0, journalRowsCompacted: 0, attemptsCompacted: 0 }
          : await pruneOnce({ db: h.db, logger, retentionDays: 1, now: () => new Date(cutoff + DAY_MS) });
      out.push({
        round: r,
        lifecycles: done,
        rows: await counts(),
        pruned: {
          outboxRows: pruned.outboxRows,
          journalRowsCompacted: pruned.journalRowsCompacted,
          attemptsCompacted: pruned.attemptsCompacted,
        },
      });
    }
    const per = (from: RetentionRound | undefined, to: RetentionRound | undefined) => {
      const growth = {} as Record<RetentionTable, number>;
      for (const table of retentionTables) {
        const lifecycles = (to?.lifecycles ?? 0) - (from?.lifecycles ?? 0);
        growth[table] =
          to === undefined || lifecycles <= 0
            ? Number.NaN
            : round(((to.rows[table] ?? 0) - (from?.rows[table] ?? 0)) / lifecycles, 2);
      }
      return growth;
    };
    // The first round whose pass had a full window behind it, then the last.
    const full = out[Math.min(out.length - 1, keepRounds + 1)];
    return {
      rounds: out,
      perRound,
      keepRounds,
      failed,
      growthPerLifecycle: per(full, out.at(-1)),
      unprunedPerLifecycle: per(undefined, out[keepRounds - 1]),
    };
  } finally {
    await engine.close();
  }
}

/**
 * Whether the tables stayed bounded once the window was full: the outbox and the attempts grow by
 * at most a tenth of their unpruned rate per lifecycle, and the journal by at most two rows (the
 * final transition and the summary) plus a tenth of the rest (the window's rows vary a little with
 * the describes each lifecycle happened to make).
 */
export function retentionFlat(r: RetentionResult): boolean {
  const g = r.growthPerLifecycle;
  const u = r.unprunedPerLifecycle;
  return (
    r.failed === 0 &&
    g.outbox <= 0.1 * u.outbox &&
    g.provider_attempts <= 0.1 * u.provider_attempts &&
    g.environment_journal <= 2 + 0.1 * Math.max(0, u.environment_journal - 2)
  );
}
