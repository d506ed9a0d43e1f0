// Chaos: an all-in-one process (`sandlot serve`: API and workers) is SIGKILLed in the middle of 60
// provisions, while it holds jobs whose
// attempts are Pending and calls that are Dispatched. A live worker takes over: every attempt that
// was Pending at the kill is dispatched, and every one that was Dispatched reaches Unknown (and
// reconciliation), within one call deadline plus 5 s; no Dispatched attempt is ever called again
// (dispatch_count stays 1), and every lease ends Active with exactly one resource.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers, type WorkerHost } from '../../workers/host.ts';
import { deleteKeys, redisUrl, silentLogger, uniquePrefix, waitFor } from '../integration/workers-support.ts';
import {
  databaseUrlFor,
  productionStandIns,
  startWorkerProcess,
  type WorkerProcess,
} from '../support/chaos-worker.ts';
import { isolatedPostgres, testDatabaseUrl, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';
import { json, provisionBody, type Scenario } from '../support/sandbox-flow.ts';

const LEASES = 60;
const CALL_TIMEOUT_MS = 2_000;
const LOCK_MS = 1_000;

describe('chaos: SIGKILL of an all-in-one process during provisions', () => {
  const url = redisUrl(0);
  const prefix = uniquePrefix();
  let pg: IsolatedPostgres;
  let h: Harness;
  let child: WorkerProcess | undefined;
  let live: WorkerHost | undefined;
  let standIns: Awaited<ReturnType<typeof productionStandIns>>;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { workers: false });
    standIns = await productionStandIns(h);
  });
  afterAll(async () => {
    if (child !== undefined && !child.exited) await child.stop('SIGKILL');
    await live?.close();
    await h.close();
    await standIns?.close();
    await deleteKeys(url, prefix);
    await pg.drop();
  });

  const attempts = async () =>
    (
      await h.db.query<{ attemptId: string; kind: string; state: string; dispatchCount: number }>(
        `SELECT attempt_id AS "attemptId", kind, state, dispatch_count AS "dispatchCount" FROM provider_attempts
          WHERE kind <> 'describe'`,
      )
    ).rows;

  it('recovers every attempt the dead process held within one call deadline plus 5 s', async () => {
    await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-1', subject: 'alice' });
    const operator = await h.token('acme', 'ops', { operator: true });
    await h.request('PUT', '/admin/tenants/acme/projects/checkout/network-policies/1', {
      token: operator,
      body: { policy: { egress: [] } },
    });
    const token = await h.token('acme', 'alice');
    const envs = '/api/projects/checkout/runs/run-1/environments';
    const scenarios: Scenario[] = [];
    for (let i = 0; i < LEASES; i++) {
      const registered = await h.request('POST', envs, { token, body: { idempotencyKey: `k-${i}` } });
      const { environmentId } = await json<{ environmentId: string }>(registered);
      const base = `${envs}/${environmentId}`;
      const volume = await json<Scenario['volume']>(
        await h.request('POST', `${base}/workspace-volumes`, { token, body: { idempotencyKey: 'ws' } }),
      );
      scenarios.push({ token, base, environmentId, volume });
    }

    // The doomed all-in-one process: every provision takes 300-600 ms, so it always holds calls in
    // flight. It runs the same workers as `sandlot worker`, next to its API.
    child = await startWorkerProcess(
      {
        ...standIns.settings,
        DATABASE_URL: databaseUrlFor(testDatabaseUrl, pg.schema),
        REDIS_URL: url,
        SANDLOT_BULLMQ_PREFIX: prefix,
        SANDLOT_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS),
        SANDLOT_QUEUE_LOCK_MS: String(LOCK_MS),
        SANDLOT_WORKER_CONCURRENCY: '16',
        SANDLOT_RECONCILE_EVERY_MS: '300',
        SANDLOT_SIMULATED_FAULTS: JSON.stringify({ latencyMs: { min: 300, max: 600 } }),
        SANDLOT_MIGRATE_ON_START: 'false',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
      },
      { command: 'serve' },
    );
    for (const s of scenarios) {
      const res = await h.request('POST', `${s.base}/sandbox/provision`, { token, body: provisionBody(s) });
      expect(res.status).toBe(202);
    }
    await waitFor(async () => (await attempts()).filter((a) => a.state === 'Dispatched').length >= 4, {
      timeoutMs: 20_000,
      what: 'the worker to hold calls in flight',
    });
    await child.stop('SIGKILL');
    const killedAt = Date.now();
    const atKill = await attempts();
    const dispatchedAtKill = new Set(atKill.filter((a) => a.state === 'Dispatched').map((a) => a.attemptId));
    const pendingAtKill = new Set(atKill.filter((a) => a.state === 'Pending').map((a) => a.attemptId));
    expect(dispatchedAtKill.size).toBeGreaterThan(0);

    live = await startWorkers(
      { db: h.db, runtime: h.runtime, provider: h.provider, logger: silentLogger },
      {
        redisUrl: url,
        prefix,
        queueLockMs: LOCK_MS,
        callTimeoutMs: CALL_TIMEOUT_MS,
        relayPollMs: 100,
        republishAfterMs: 500,
        reconcileEveryMs: 300,
        observeEveryMs: 600_000,
      },
    );
    let pendingDoneMs = 0;
    let dispatchedDoneMs = 0;
    await waitFor(
      async () => {
        const byId = new Map((await attempts()).map((a) => [a.attemptId, a.state]));
        if (pendingDoneMs === 0 && [...pendingAtKill].every((id) => byId.get(id) !== 'Pending')) {
          pendingDoneMs = Date.now() - killedAt;
        }
        if (dispatchedDoneMs === 0 && [...dispatchedAtKill].every((id) => byId.get(id) !== 'Dispatched')) {
          dispatchedDoneMs = Date.now() - killedAt;
        }
        return pendingDoneMs > 0 && dispatchedDoneMs > 0;
      },
      { timeoutMs: CALL_TIMEOUT_MS + 5_000, intervalMs: 50, what: 'every held attempt to be taken over' },
    );
    console.log(
      `after SIGKILL: ${pendingAtKill.size} Pending attempts dispatched within ${pendingDoneMs} ms, ` +
        `${dispatchedAtKill.size} Dispatched attempts expired within ${dispatchedDoneMs} ms`,
    );
    expect(Math.max(pendingDoneMs, dispatchedDoneMs)).toBeLessThanOrEqual(CALL_TIMEOUT_MS + 5_000);

    await waitFor(
      async () =>
        (
          await h.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM sandbox_leases WHERE state = 'Active'`,
          )
        ).rows[0]?.n === LEASES,
      { timeoutMs: 30_000, what: `all ${LEASES} leases Active` },
    );
    // No attempt was ever dispatched twice, and every operation holds exactly one resource.
    expect((await attempts()).filter((a) => a.dispatchCount > 1)).toEqual([]);
    expect(await h.provider.countResources({})).toBe(LEASES);
    expect(await h.provider.countResources({ includeDeleted: true })).toBe(LEASES);
  }, 120_000);
});
