// Chaos: the only worker process is SIGKILLed while a provision attempt is Dispatched, that is after
// the durable attempt said "calling the provider" and before any result was recorded. A new worker
// process must recover the lease through the reconciler (deadline → Unknown → ReconciliationRequired
// → exact listOwned) and the provider must end up with exactly one resource for the operation.
//
// The API runs here (buildHarness without workers); the workers run only in `sandlot worker` child
// processes over the same PostgreSQL schema. Effects committed here reach them through their outbox
// relay, since the in-process hand-off has no sink in this process.
//
// Kill timings, made deterministic with the simulated provider's scripted faults (it applies the
// fault's latency before writing the resource, and `timeout-after-apply` after writing it):
//   - before apply: provision call 1 sleeps 1 s before it writes anything; we kill while it sleeps.
//   - after apply: provision call 1 writes the resource, then hangs until its deadline; we kill once
//     the resource row exists.
// The restarted worker gets the same fault plan, as a restarted pod would. Its fault counters start
// from 1 again, so in the before-apply case the retried provision sleeps 1 s again (within the 2 s
// call deadline).
//
// Redis: logical db 7, not 6. test/chaos/redis-flush.test.ts FLUSHDBes db 6 and vitest may run it in
// parallel with this file, which would wipe this file's BullMQ keys (the reconciler's job scheduler
// among them) at an arbitrary moment.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readJournal } from '../../store/journal.ts';
import type { Database } from '../../store/db.ts';
import { deleteKeys, uniquePrefix } from '../integration/workers-support.ts';
import {
  databaseUrlFor,
  productionStandIns,
  startWorkerProcess,
  type WorkerProcess,
} from '../support/chaos-worker.ts';
import { isolatedPostgres, testDatabaseUrl, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
} from '../support/sandbox-flow.ts';

const REDIS_URL = `${process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379'}/7`;
const CALL_TIMEOUT_MS = 2_000;

interface AttemptState {
  attemptId: string;
  kind: string;
  state: string;
  resolution: string | null;
}

async function attemptsOf(db: Database, operationId: string): Promise<AttemptState[]> {
  const { rows } = await db.query<AttemptState>(
    `SELECT attempt_id AS "attemptId", kind, state, resolution FROM provider_attempts
      WHERE operation_id = $1 AND kind <> 'describe' ORDER BY created_at, attempt_id`,
    [operationId],
  );
  return rows;
}

async function leaseState(db: Database, operationId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ state: string }>(
    'SELECT state FROM sandbox_leases WHERE operation_id = $1',
    [operationId],
  );
  return rows[0]?.state;
}

async function poll<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  { timeoutMs = 15_000, intervalMs = 10 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

const cases = [
  {
    name: 'before the resource is applied',
    key: 'before-apply',
    script: [{ operation: 'provision', call: 1, fault: 'latency', ms: 1_000 }],
    appliedAtKill: 0,
  },
  {
    name: 'after the resource is applied',
    key: 'after-apply',
    script: [{ operation: 'provision', call: 1, fault: 'timeout-after-apply' }],
    appliedAtKill: 1,
  },
] as const;

describe('chaos: a worker process SIGKILLed between Dispatched and the result', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  const prefix = uniquePrefix().replace('sandlot-test-', 'chaos-kill-');
  const children: WorkerProcess[] = [];

  let standIns: Awaited<ReturnType<typeof productionStandIns>>;

  const workerEnv = (script: readonly object[]): Record<string, string> => ({
    ...standIns.settings,
    DATABASE_URL: databaseUrlFor(testDatabaseUrl, pg.schema),
    REDIS_URL,
    SANDLOT_BULLMQ_PREFIX: prefix,
    SANDLOT_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS),
    SANDLOT_RECONCILE_EVERY_MS: '300',
    SANDLOT_SIMULATED_FAULTS: JSON.stringify({ script }),
    LOG_LEVEL: 'warn',
  });
  const spawnWorker = async (script: readonly object[]) => {
    const child = await startWorkerProcess(workerEnv(script));
    children.push(child);
    return child;
  };

  beforeAll(async () => {
    pg = await isolatedPostgres();
    // Migrated here, before any child starts; the API side runs no workers at all.
    h = await buildHarness(pg.open(), { workers: false });
    standIns = await productionStandIns(h);
  });
  afterEach(async () => {
    for (const child of children.splice(0)) if (!child.exited) await child.stop('SIGTERM');
  });
  afterAll(async () => {
    for (const child of children.splice(0)) if (!child.exited) await child.stop('SIGKILL');
    await h?.close();
    await standIns?.close();
    await pg?.drop();
    await deleteKeys(REDIS_URL, prefix);
  });

  it.each(cases)(
    'recovers the lease to Active with one resource when killed $name',
    async ({ key, script, appliedAtKill }) => {
      const s = await setupScenario(h, { run: `run-${key}` });
      const first = await spawnWorker(script);

      const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s),
      });
      expect(provisioned.status).toBe(202);
      const operationId = String((await json(provisioned))['operationId']);

      // Reached through the child's outbox relay: Pending → Dispatched in its beginAttempt.
      const dispatched = await poll('the provision attempt to be Dispatched', async () => {
        const attempts = await attemptsOf(h.db, operationId);
        return attempts.find((a) => a.kind === 'provision' && a.state === 'Dispatched');
      });
      if (appliedAtKill === 1) {
        await poll('the provider to hold the resource', async () =>
          (await h.provider.countResources({ operationId })) === 1 ? true : undefined,
        );
      }
      const killed = await first.stop('SIGKILL');
      expect(killed.signal).toBe('SIGKILL');

      // Nothing recorded a result: the attempt is still Dispatched and the lease still Provisioning.
      expect(await attemptsOf(h.db, operationId)).toEqual([
        expect.objectContaining({ attemptId: dispatched.attemptId, kind: 'provision', state: 'Dispatched' }),
      ]);
      expect(await leaseState(h.db, operationId)).toBe('Provisioning');
      expect(await h.provider.countResources({ operationId, includeDeleted: true })).toBe(appliedAtKill);

      const second = await spawnWorker(script);
      const active = await waitForLease(h, s, (lease) => lease['state'] === 'Active', 30_000);
      expect(active).toMatchObject({ operationId, resourceGeneration: 1, current: true });
      expect(second.exited).toBe(false);

      // Exactly one resource for the operation, live, and none released or duplicated.
      expect(await h.provider.countResources({ operationId })).toBe(1);
      expect(await h.provider.countResources({ operationId, includeDeleted: true })).toBe(1);

      // The path went through reconciliation: the dead worker's attempt expired to Unknown; an exact
      // listOwned found the resource, or found nothing and provisioning ran again under the same
      // operation, whose resource (the one deterministic resource) then settled the Unknown attempt.
      const attempts = await attemptsOf(h.db, operationId);
      expect(attempts.filter((a) => ['Pending', 'Dispatched', 'Unknown'].includes(a.state))).toEqual([]);
      expect(attempts[0]).toMatchObject({ attemptId: dispatched.attemptId, kind: 'provision' });
      expect(attempts.map((a) => [a.kind, a.state])).toEqual(
        appliedAtKill === 1
          ? [
              ['provision', 'Succeeded'],
              ['listOwned', 'Succeeded'],
            ]
          : [
              ['provision', 'Succeeded'],
              ['listOwned', 'Succeeded'],
              ['provision', 'Succeeded'],
            ],
      );
      const events = (await readJournal(h.db, s.environmentId)).map((entry) => entry.eventType);
      expect(events).toContain('provider.unknown');
      expect(events).toContain('sandbox.reconcile');

      // And nothing leaks: releasing through the new worker leaves no live resource.
      const release = await h.request('POST', `${s.base}/release`, {
        token: s.token,
        body: { expectedLifecycleGeneration: 1, idempotencyKey: `release-${key}` },
      });
      expect(release.status).toBe(202);
      await waitForLifecycle(h, s, 'Released', 20_000);
      expect(await h.provider.countResources({ operationId })).toBe(0);
      expect(await leaseState(h.db, operationId)).toBe('Released');
    },
    90_000,
  );
});
