// Pruning keeps the tables that grow with every lifecycle bounded, and never what reconciliation or
// an audit needs: acknowledged outbox rows go after a short grace; the journal of an Environment
// released longer ago than the retention window becomes one summary row beside its final transition,
// and its settled provider attempts are folded into that summary once no late sweep is due (the
// audit still reads it clean and accounts for every provider call); leases and a live Environment's
// journal and attempts stay. A dry run counts the same and changes nothing. The clock is the
// test's: days pass in a call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAudit } from '../../actors/audit.ts';
import { createLogger } from '../../lib/logger.ts';
import { readJournal } from '../../store/journal.ts';
import { COMPACTED, type CompactedSummary } from '../../store/prune.ts';
import { LATE_SWEEPS } from '../../store/leases.ts';
import { OUTBOX_GRACE_MS, pruneOnce } from '../../workers/pruner.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { eventually } from '../support/sandbox-scenarios.ts';
import {
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
  type Scenario,
} from '../support/sandbox-flow.ts';

const DAY_MS = 86_400_000;
const logger = createLogger({ level: 'silent' });

describe('pruning', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let released: Scenario;
  let live: Scenario;

  async function provision(run: string): Promise<Scenario> {
    const s = await setupScenario(h, { run });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    return s;
  }

  beforeAll(async () => {
    pg = await isolatedPostgres();
    // Late sweeps come 150 ms apart, so the released lease is swept out before the tests prune.
    h = await buildHarness(pg.open(), { workers: { callTimeoutMs: 2_000, lateSweepMs: 150 } });
    released = await provision('run-prune-released');
    const release = await h.request('POST', `${released.base}/release`, {
      token: released.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
    });
    expect(release.status).toBe(202);
    await waitForLifecycle(h, released, 'Released');
    await eventually('the released lease swept out', async () => {
      const { rows } = await h.db.query<{ n: number }>(
        'SELECT sweeps_listed AS n FROM sandbox_leases WHERE environment_id = $1',
        [released.environmentId],
      );
      return (rows[0]?.n ?? 0) >= LATE_SWEEPS ? true : undefined;
    });
    live = await provision('run-prune-live');
  });
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  const count = async (sql: string, params: unknown[] = []) =>
    (await h.db.query<{ n: number }>(sql, params)).rows[0]?.n ?? 0;
  const tables = async () => ({
    outbox: await count('SELECT count(*)::int AS n FROM outbox'),
    acknowledged: await count('SELECT count(*)::int AS n FROM outbox WHERE acknowledged_at IS NOT NULL'),
    journal: await count('SELECT count(*)::int AS n FROM environment_journal'),
    attempts: await count('SELECT count(*)::int AS n FROM provider_attempts'),
    releasedAttempts: await count(
      'SELECT count(*)::int AS n FROM provider_attempts WHERE environment_id = $1',
      [released.environmentId],
    ),
    leases: await count('SELECT count(*)::int AS n FROM sandbox_leases'),
  });
  const at = (ms: number) => ({ db: h.db, logger, retentionDays: 30, now: () => new Date(Date.now() + ms) });

  it('keeps everything inside the grace and the retention window', async () => {
    const before = await tables();
    expect(before.acknowledged).toBeGreaterThan(0);
    expect(await pruneOnce(at(0))).toEqual({
      outboxRows: 0,
      environmentsCompacted: 0,
      journalRowsCompacted: 0,
      attemptsCompacted: 0,
    });
    expect(await tables()).toEqual(before);
  });

  it('a dry run counts what would go and changes nothing', async () => {
    const before = await tables();
    const journalRows = (await readJournal(h.db, released.environmentId)).length;
    const counts = await pruneOnce(at(31 * DAY_MS), { dryRun: true });
    expect(counts).toEqual({
      outboxRows: before.acknowledged,
      environmentsCompacted: 1,
      journalRowsCompacted: journalRows - 1,
      attemptsCompacted: before.releasedAttempts,
    });
    expect(before.releasedAttempts).toBeGreaterThan(0);
    expect(await tables()).toEqual(before);
  });

  it('deletes acknowledged outbox rows past the grace, and only those', async () => {
    const before = await tables();
    const counts = await pruneOnce(at(OUTBOX_GRACE_MS + 60_000));
    expect(counts).toEqual({
      outboxRows: before.acknowledged,
      environmentsCompacted: 0,
      journalRowsCompacted: 0,
      attemptsCompacted: 0,
    });
    const after = await tables();
    expect(after).toEqual({ ...before, outbox: before.outbox - before.acknowledged, acknowledged: 0 });
  });

  it('compacts the journal of an Environment released past the retention window into one summary, and keeps its attempts while a late sweep is due', async () => {
    const before = await tables();
    const journal = await readJournal(h.db, released.environmentId);
    const liveJournal = await readJournal(h.db, live.environmentId);
    // A sweep still to come (not due for a day, so no reconciler runs it meanwhile): the attempts stay.
    const lease = { environmentId: released.environmentId };
    const due = await h.db.query(
      `UPDATE sandbox_leases SET sweeps_listed = 1, terminal_at = terminal_at + interval '1 day'
        WHERE environment_id = $1`,
      [lease.environmentId],
    );
    expect(due.rowCount).toBe(1);
    const counts = await pruneOnce(at(31 * DAY_MS));
    expect(counts).toMatchObject({
      environmentsCompacted: 1,
      journalRowsCompacted: journal.length - 1,
      attemptsCompacted: 0,
    });

    const compacted = await readJournal(h.db, released.environmentId);
    const final = journal.at(-1);
    expect(compacted.map((e) => [e.revision, e.eventType])).toEqual([
      [0, COMPACTED],
      [final?.revision, final?.eventType],
    ]);
    const summary = compacted[0]?.event as CompactedSummary;
    expect(summary).toMatchObject({
      rows: journal.length - 1,
      through: journal.length - 1,
      releasedBy: 'alice',
    });
    expect(summary.attempts).toBeUndefined();
    expect(Object.values(summary.events).reduce((a, b) => a + b, 0)).toBe(journal.length - 1);
    expect(summary.events['environment.release']).toBe(1);
    // The live Environment's journal, every attempt and every lease stay.
    expect(await readJournal(h.db, live.environmentId)).toEqual(liveJournal);
    expect(await tables()).toMatchObject({ attempts: before.attempts, leases: before.leases });
    // The lifecycle still reads as it was, and the audit finds nothing in a compacted journal.
    expect((await h.request('GET', `${released.base}/lifecycle`, { token: released.token })).status).toBe(
      200,
    );
    const report = await runAudit({ db: h.db, provider: h.provider, callLog: true });
    expect(report.findings.journalGaps).toEqual([]);
    expect(report.findings.disallowedTransitions).toEqual([]);
    expect(report.total).toBe(0);

    // The sweep listed: the next pass folds the settled attempts into the summary, and only those.
    await h.db.query(
      `UPDATE sandbox_leases SET sweeps_listed = $2, terminal_at = terminal_at - interval '1 day'
        WHERE environment_id = $1`,
      [lease.environmentId, LATE_SWEEPS],
    );
    const attempts = (
      await h.db.query<{ kind: string; state: string; operationId: string }>(
        `SELECT kind, state, operation_id AS "operationId" FROM provider_attempts WHERE environment_id = $1`,
        [lease.environmentId],
      )
    ).rows;
    expect(await pruneOnce(at(31 * DAY_MS))).toMatchObject({
      environmentsCompacted: 0,
      attemptsCompacted: before.releasedAttempts,
    });
    expect(await tables()).toMatchObject({
      attempts: before.attempts - before.releasedAttempts,
      releasedAttempts: 0,
      leases: before.leases,
    });
    const folded = (await readJournal(h.db, released.environmentId))[0]?.event as CompactedSummary;
    expect({ ...folded, attempts: undefined }).toEqual({ ...summary, attempts: undefined });
    const expected: Record<string, number> = {};
    for (const a of attempts) expected[`${a.kind}/${a.state}`] = (expected[`${a.kind}/${a.state}`] ?? 0) + 1;
    expect(folded.attempts).toMatchObject({
      rows: attempts.length,
      counts: expected,
      operations: [...new Set(attempts.map((a) => a.operationId))],
    });
    expect(folded.attempts?.ownerHashes).toHaveLength(1);
    expect(folded.attempts?.counts['provision/Succeeded']).toBe(1);
    expect(folded.attempts?.counts['release/Succeeded']).toBe(1);
    // Every provider call the released Environment made is still accounted for by the audit.
    const after = await runAudit({ db: h.db, provider: h.provider, callLog: true });
    expect(after.findings.callsWithoutAttempt).toEqual([]);
    expect(after.total).toBe(0);
    // Compacting again finds nothing more to do.
    expect(await pruneOnce(at(32 * DAY_MS))).toMatchObject({
      environmentsCompacted: 0,
      attemptsCompacted: 0,
    });
  });
});
