// Concurrent inspections of one lease share a describe that is not dispatched yet, so a burst of
// GETs costs a few describe attempts, not one each; every answer is still an exact observation made
// after its request arrived. A describe whose process died is expired by the reconciler like any
// other attempt, never left Dispatched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { reconcileOnce } from '../../workers/reconciler.ts';
import { runnerDeps } from '../../workers/host.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

describe('describe attempts', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let s: Scenario;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { workers: {} });
    s = await setupScenario(h, { run: 'run-inspect' });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active');
  });
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  const describes = async () =>
    (
      await h.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM provider_attempts WHERE environment_id = $1 AND kind = 'describe'`,
        [s.environmentId],
      )
    ).rows[0]?.n ?? 0;

  it('shares one describe among 50 concurrent inspections', async () => {
    const before = await describes();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
      ),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      const body = await json<{ observation: { exact: boolean }; readyForDispatch: boolean }>(answer);
      expect(body.observation.exact).toBe(true);
      expect(body.readyForDispatch).toBe(true);
    }
    const opened = (await describes()) - before;
    console.log(`describe attempts for 50 concurrent inspections: ${opened}`);
    expect(opened).toBeGreaterThanOrEqual(1);
    expect(opened).toBeLessThanOrEqual(5);

    // Attempt views show what a describe saw, never the owner binding or the owner hash.
    const lease = await json<{ lease: { operationId: string } }>(
      await h.request('GET', `${s.base}/sandbox`, { token: s.token }),
    );
    const view = await h.request(
      'GET',
      `${s.base}/sandbox/v1/operations/${lease.lease.operationId}/provider-attempts`,
      {
        token: s.token,
      },
    );
    const text = await view.text();
    expect(text).not.toMatch(/ownerHash|"owner"|providerOptions/);
    const { attempts } = JSON.parse(text) as { attempts: { kind: string; receipt: unknown }[] };
    for (const attempt of attempts.filter((a) => a.kind === 'describe' && a.receipt !== null)) {
      expect(Object.keys(attempt.receipt as object).sort()).toEqual(['finished', 'phase', 'present']);
    }
  });

  it('expires a describe left Dispatched by a dead process', async () => {
    // A describe opened and dispatched by a process that then died: no one will complete it.
    const lease = await json<{ lease: { resourceGeneration: number; providerFence: number } }>(
      await h.request('GET', `${s.base}/sandbox`, { token: s.token }),
    );
    // Marked Dispatched (deadline passed) in the very transaction that opens it, so no live worker
    // of this test can begin it: exactly what a process that died after dispatch leaves behind.
    const opened = await h.runtime.send(
      s.environmentId,
      { type: 'sandbox.describe', ...lease.lease },
      {
        actor: 'test',
        beforeCommit: async (tx) => {
          await tx.query(
            `UPDATE provider_attempts
                SET state = 'Dispatched', dispatched_at = now(), deadline_at = now() - interval '1 second'
              WHERE environment_id = $1 AND kind = 'describe' AND state = 'Pending'`,
            [s.environmentId],
          );
        },
      },
    );
    const attemptId = opened.accepted ? opened.effects[0]?.attemptId : null;
    expect(attemptId).toEqual(expect.any(String));
    const deps = runnerDeps(
      { db: h.db, runtime: h.runtime, provider: h.provider, logger: createLogger({ level: 'silent' }) },
      2_000,
    );
    const report = await reconcileOnce({ ...deps, logger: createLogger({ level: 'silent' }) });
    expect(report.expired).toBeGreaterThanOrEqual(1);
    const { rows } = await h.db.query<{ state: string; error: { code: string } | null }>(
      'SELECT state, error FROM provider_attempts WHERE attempt_id = $1',
      [attemptId],
    );
    expect(rows[0]).toMatchObject({ state: 'Unknown', error: { code: 'deadline-passed' } });
    // A describe blocks nothing: the lease is still Active.
    expect(await json(await h.request('GET', `${s.base}/sandbox`, { token: s.token }))).toMatchObject({
      lease: { state: 'Active' },
    });
  });
});
