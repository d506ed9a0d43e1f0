// A provider that keeps failing is asked less, not more. Reconciliation opens one listing per lease
// at a time, and after each listing that settled nothing waits longer (base · 2^(n−1), at most max,
// jittered), longer still when the provider fails for most of its waiting leases; the observer backs
// off a lease whose describes fail, stops asking a failing provider for the rest of its pass; and
// inspections never race a describe already in flight. The reconciler's clock is the test's, so
// minutes of passes run in seconds; the calls themselves are real (PostgreSQL, Redis, workers).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import type { Backoff } from '../../store/backoff.ts';
import { leasesNeedingReconciliation } from '../../store/leases.ts';
import { runnerDeps } from '../../workers/host.ts';
import { observeOnce } from '../../workers/observer.ts';
import { reconcileOnce } from '../../workers/reconciler.ts';
import { attemptRunner } from '../../workers/effect-processor.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { eventually } from '../support/sandbox-scenarios.ts';

const logger = createLogger({ level: 'silent' });
const backoff: Backoff = { baseMs: 1_000, maxMs: 8_000, providerFactor: 4, providerQuorum: 4 };
const NO_SWEEP_MS = 3_600_000;

interface AttemptView {
  attemptId: string;
  state: string;
  createdAt: Date;
}

describe('backoff against a failing provider', () => {
  let pg: IsolatedPostgres;
  let h: Harness;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    // Workers run the attempts; the reconciler and observer passes are the test's own.
    h = await buildHarness(pg.open(), { workers: { reconcileEveryMs: 3_600_000 } });
  });
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  const attempts = async (environmentId: string, kind: string) =>
    (
      await h.db.query<AttemptView>(
        `SELECT attempt_id AS "attemptId", state, created_at AS "createdAt" FROM provider_attempts
          WHERE environment_id = $1 AND kind = $2 ORDER BY created_at, attempt_id`,
        [environmentId, kind],
      )
    ).rows;
  const settled = (environmentId: string, kind: string, count: number) =>
    eventually(`${count} ${kind} attempts to end`, async () => {
      const rows = await attempts(environmentId, kind);
      return rows.length >= count && rows.every((a) => a.state !== 'Pending' && a.state !== 'Dispatched')
        ? rows
        : undefined;
    });
  const deps = (now: Date) => ({
    ...runnerDeps({ db: h.db, runtime: h.runtime, provider: h.provider, logger }, 2_000),
    logger,
    backoff,
    lateSweepMs: NO_SWEEP_MS,
    now: () => now,
  });

  /** An Environment whose provision call failed uncertainly: its lease waits in ReconciliationRequired. */
  async function waitingLease(run: string): Promise<Scenario> {
    const s = await setupScenario(h, { run });
    h.provider.injectFault('provision', 'server-error');
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
    return s;
  }

  it('spaces the listings of one lease out, one at a time, up to the longest wait', async () => {
    const s = await waitingLease('run-backoff-one');
    const start = Date.now();
    let clock = start;
    const opened: number[] = [];
    // Two simulated minutes of passes every 500 ms, each listing failing like the provision did.
    for (let pass = 0; pass < 240; pass++) {
      clock = start + pass * 500;
      const before = (await attempts(s.environmentId, 'listOwned')).length;
      // The fault goes in only ahead of a listing that will run (injected faults queue up).
      const due = await leasesNeedingReconciliation(h.db, 10, new Date(clock), backoff);
      if (due.some((l) => l.environmentId === s.environmentId)) {
        h.provider.injectFault('listOwned', 'server-error');
      }
      const report = await reconcileOnce(deps(new Date(clock)));
      if (report.reconciling === 0) continue;
      opened.push(clock);
      // While it runs, no pass lists this lease again, however late its clock.
      const inFlight = await attempts(s.environmentId, 'listOwned');
      expect(inFlight).toHaveLength(before + 1);
      if (inFlight.at(-1)?.state === 'Pending' || inFlight.at(-1)?.state === 'Dispatched') {
        const far = new Date(clock + 3_600_000);
        const due = await leasesNeedingReconciliation(h.db, 10, far, backoff);
        const still = (await attempts(s.environmentId, 'listOwned')).at(-1)?.state;
        // Only meaningful if the listing was still running after the query read it.
        if (still === 'Pending' || still === 'Dispatched')
          expect(due.map((l) => l.environmentId)).not.toContain(s.environmentId);
      }
      const ended = (await settled(s.environmentId, 'listOwned', before + 1)).at(-1);
      // It ended on the test's clock (the passes run minutes ahead of the wall clock).
      await h.db.query(
        'UPDATE provider_attempts SET resolved_at = $2, updated_at = $2 WHERE attempt_id = $1',
        [ended?.attemptId, new Date(clock)],
      );
    }
    const listings = await attempts(s.environmentId, 'listOwned');
    expect(listings.every((a) => a.state === 'Unknown' || a.state === 'Failed')).toBe(true);
    expect(listings).toHaveLength(opened.length);
    // Without backoff every pass lists: 240. With it, the n-th gap is at least half of
    // min(max, base · 2^(n−1)) (the passes are 500 ms apart, so a gap may run up to 500 ms over).
    const gaps = opened.slice(1).map((t, i) => t - (opened[i] ?? t));
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(0.5 * Math.min(backoff.maxMs, backoff.baseMs * 2 ** i));
      expect(gap).toBeLessThanOrEqual(Math.min(backoff.maxMs, backoff.baseMs * 2 ** i) + 1_000);
    });
    console.log(`listings in 120 s of reconciler passes against a failing provider: ${opened.length}`);
    expect(opened.length).toBeGreaterThanOrEqual(120_000 / backoff.maxMs);
    expect(opened.length).toBeLessThanOrEqual(4 + 120_000 / (0.5 * backoff.maxMs));

    // The provider answers again: the next listing due settles the lease and the episode ends.
    await eventually('the lease to be reconciled', async () => {
      clock += 500;
      await reconcileOnce(deps(new Date(clock)));
      const lease = await json<{ lease: { state: string } }>(
        await h.request('GET', `${s.base}/sandbox`, { token: s.token }),
      );
      return lease.lease.state === 'ReconciliationRequired' ? undefined : lease.lease.state;
    });
  });

  it('waits longer for every lease of a provider that fails for most of them', async () => {
    const waiting = [];
    for (let i = 0; i < 4; i++) waiting.push(await waitingLease(`run-backoff-many-${i}`));
    const ids = waiting.map((s) => s.environmentId);
    const due = async (at: number) =>
      (await leasesNeedingReconciliation(h.db, 50, new Date(at), backoff))
        .map((l) => l.environmentId)
        .filter((id) => ids.includes(id));
    // Every lease's first listing is due at once, and fails.
    const start = Date.now();
    expect((await due(start)).sort()).toEqual([...ids].sort());
    for (let i = 0; i < 4; i++) h.provider.injectFault('listOwned', 'server-error');
    await reconcileOnce(deps(new Date(start)));
    for (const id of ids) await settled(id, 'listOwned', 1);
    // One lease failing alone would be due again within base (1 s); a failing provider's wait is
    // base × factor (4 s), jittered into [2 s, 4 s).
    const failedAt = Date.now();
    expect(await due(failedAt + backoff.baseMs + 100)).toEqual([]);
    expect((await due(failedAt + backoff.baseMs * backoff.providerFactor + 100)).sort()).toEqual(
      [...ids].sort(),
    );
  });

  it('the observer backs off a lease whose describes fail, and holds back a failing provider', async () => {
    const active: Scenario[] = [];
    for (let i = 0; i < 6; i++) {
      const s = await setupScenario(h, { run: `run-observe-${i}` });
      const res = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s),
      });
      expect(res.status).toBe(202);
      await waitForLease(h, s, (l) => l['state'] === 'Active');
      active.push(s);
    }
    // Every Active lease counts (the first test's lease is Active again too).
    const describes = async () =>
      (
        await h.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM provider_attempts WHERE kind = 'describe'`,
        )
      ).rows[0]?.n ?? 0;
    const activeCount =
      (
        await h.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM sandbox_leases WHERE state = 'Active'`,
        )
      ).rows[0]?.n ?? 0;
    expect(activeCount).toBeGreaterThanOrEqual(6);
    const observer = (now: Date) => ({
      ...deps(now),
      runner: attemptRunner(
        runnerDeps({ db: h.db, runtime: h.runtime, provider: h.provider, logger }, 2_000),
      ),
      describeTimeoutMs: 2_000,
      batchSize: 1_000,
      // One at a time, so the quorum is reached exactly (lanes in flight would each finish theirs).
      concurrency: 1,
    });
    // Every describe of this pass fails: after 4 (the quorum), the provider is held back.
    const before = await describes();
    for (let i = 0; i < backoff.providerQuorum; i++) h.provider.injectFault('describe', 'server-error');
    const start = Date.now();
    await observeOnce(observer(new Date(start)));
    expect((await describes()) - before).toBe(backoff.providerQuorum);
    // The failed ones wait; the two held back are first in the next pass.
    const held = await h.db.query<{ environmentId: string; failures: number }>(
      `SELECT environment_id AS "environmentId", observe_failures AS failures FROM sandbox_leases
        WHERE state = 'Active'`,
    );
    expect(held.rows.filter((r) => r.failures === 1)).toHaveLength(backoff.providerQuorum);
    const next = await describes();
    await observeOnce(observer(new Date(start + 100)));
    expect((await describes()) - next).toBe(activeCount - backoff.providerQuorum);
    // Once their waits pass, the failed leases are described again, and an answer clears the wait.
    await observeOnce(observer(new Date(Date.now() + backoff.maxMs + 1_000)));
    const cleared = await h.db.query<{ failures: number }>(
      `SELECT observe_failures AS failures FROM sandbox_leases WHERE state = 'Active'`,
    );
    expect(cleared.rows.every((r) => r.failures === 0)).toBe(true);
  });

  it('an inspection waits for a describe in flight instead of opening another', async () => {
    const s = await setupScenario(h, { run: 'run-observe-inflight' });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    const lease = await json<{ lease: { resourceGeneration: number; providerFence: number } }>(
      await h.request('GET', `${s.base}/sandbox`, { token: s.token }),
    );
    // A describe dispatched by another process that is still calling (its deadline ahead).
    const opened = await h.runtime.send(
      s.environmentId,
      { type: 'sandbox.describe', ...lease.lease },
      {
        actor: 'test',
        beforeCommit: async (tx) => {
          await tx.query(
            `UPDATE provider_attempts
                SET state = 'Dispatched', dispatched_at = now(), deadline_at = now() + interval '1 hour'
              WHERE environment_id = $1 AND kind = 'describe' AND state = 'Pending'`,
            [s.environmentId],
          );
        },
      },
    );
    expect(opened.accepted).toBe(true);
    const before = (await attempts(s.environmentId, 'describe')).length;
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
      ),
    );
    for (const answer of answers) {
      const body = await json<{ observation: { exact: boolean; error: { code: string } | null } }>(answer);
      expect(body.observation).toMatchObject({ exact: false, error: { code: 'observation-pending' } });
    }
    expect((await attempts(s.environmentId, 'describe')).length).toBe(before);
  });
});
