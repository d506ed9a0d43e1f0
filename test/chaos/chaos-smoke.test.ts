// The chaos harness (chaos/harness.ts, `npm run chaos`) in small: about 100 Environments through
// two API and three worker child processes on a PostgreSQL and a Redis of the test's own, while the
// schedule kills processes, flushes Redis, restarts PostgreSQL and stalls a worker, and the
// simulated provider injects its faults. Nothing may be lost, orphaned or duplicated, no stale fence
// may change anything, reconciliation must quiesce and `sandlot audit` must be clean. Other findings
// (an unexpected status, a crash) are printed with the report: `npm run chaos` fails on them, this
// smoke test does not, so that it guards the invariants without waiting on every fix.
import { afterAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { killEverything } from '../../chaos/cleanup.ts';
import { runChaos, type ChaosResult } from '../../chaos/harness.ts';
import { chaosDefaults } from '../../chaos/options.ts';
import { formatReport } from '../../chaos/report.ts';

const SEED = 20_261_201;

/** Findings that break an invariant (the rest are printed, and fail `npm run chaos`). */
const invariantKinds = new Set([
  'lost',
  'duplicated',
  'duplicate-answers-differ',
  'stale-fence-accepted',
  'stale-fence-changed-state',
  'not-quiesced',
  'audit',
]);

describe('chaos smoke: 100 Environments through killed, flushed and restarted processes', () => {
  // After a timeout the harness is still running: none of its processes may outlive the test.
  afterAll(killEverything);

  it('loses, orphans and duplicates nothing, and the audit is clean', async (ctx) => {
    const options = chaosDefaults({
      n: 100,
      seed: SEED,
      clients: 16,
      windowMs: 25_000,
      killEveryMs: 10_000,
      redisFlushes: 1,
      pgRestarts: 1,
      stalls: 1,
      lifecycleTimeoutMs: 90_000,
      quiesceTimeoutMs: 60_000,
      resultsDir: null,
      // No build: tsc takes longer than the sources take to load through tsx.
      entry: 'tsx',
    });
    const lines: string[] = [];
    const outcome = await runChaos(options, {
      print: (line) => {
        lines.push(line);
        process.stderr.write(`${line}\n`);
      },
    });
    if ('skipped' in outcome) return ctx.skip(`chaos smoke needs its own PostgreSQL: ${outcome.skipped}`);
    const result: ChaosResult = outcome;
    console.log(formatReport(result, null));
    if (result.ok) await rm(result.runDir, { recursive: true, force: true });

    const count = (name: string) => result.counters[`faults: ${name}`] ?? 0;
    expect(count('SIGKILL api') + count('SIGKILL worker')).toBeGreaterThanOrEqual(1);
    expect(count('Redis FLUSHALL')).toBe(1);
    expect(count('PostgreSQL restart')).toBe(1);
    expect(result.providerFaults.total).toBeGreaterThan(0);

    expect(result.totals).toEqual({ lost: 0, orphaned: 0, duplicated: 0 });
    expect(result.audit.report?.total).toBe(0);
    expect(result.quiesce.quiet).toBe(true);
    expect(result.findings.filter((f) => invariantKinds.has(f.kind))).toEqual([]);
  }, 240_000);
});
