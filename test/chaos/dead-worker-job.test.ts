// A BullMQ job held by a process that died: its lock is never renewed, so BullMQ would not hand it
// out again, and ignores the relay's re-publishes (the job ID exists), until the lock expires and a
// live worker's stall check moves it back. With BullMQ's defaults that took 30-60 s (a Pending
// attempt waited 67 s after a SIGKILL); the queue's lock and stall check now follow
// SANDLOT_QUEUE_LOCK_MS, so the attempt is dispatched within one call deadline plus 5 s, and run
// exactly once. The dead process is played by a worker that takes the job by hand and then
// neither processes it nor renews its lock, exactly what a SIGKILLed process leaves behind.
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullmqEffectQueue, EFFECTS_QUEUE } from '../../workers/bullmq-effect-queue.ts';
import { startWorkers, type WorkerHost } from '../../workers/host.ts';
import { deleteKeys, redisUrl, silentLogger, uniquePrefix, waitFor } from '../integration/workers-support.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease } from '../support/sandbox-flow.ts';

const LOCK_MS = 1_000;
const CALL_TIMEOUT_MS = 2_000;

describe('chaos: a job held by a dead process', () => {
  const url = redisUrl(0);
  const prefix = uniquePrefix();
  let pg: IsolatedPostgres;
  let h: Harness;
  let live: WorkerHost | undefined;
  let dead: Worker | undefined;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { workers: false });
  });
  afterAll(async () => {
    await live?.close();
    await dead?.close(true).catch(() => undefined);
    await h.close();
    await deleteKeys(url, prefix);
    await pg.drop();
  });

  it('dispatches its Pending attempt within one call deadline plus 5 s, once', async () => {
    const s = await setupScenario(h, { run: 'run-dead-worker' });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    const { operationId } = await json<{ operationId: string }>(res);
    const attempt = async () =>
      (
        await h.db.query<{ attemptId: string; state: string; dispatchCount: number }>(
          `SELECT attempt_id AS "attemptId", state, dispatch_count AS "dispatchCount" FROM provider_attempts
            WHERE operation_id = $1 AND kind = 'provision'`,
          [operationId],
        )
      ).rows[0]!;
    const { attemptId } = await attempt();

    // The job is published and taken by a process that then dies holding it.
    const publisher = new BullmqEffectQueue({ redis: url, prefix, logger: silentLogger });
    await publisher.publish([{ attemptId }]);
    await publisher.close();
    dead = new Worker(EFFECTS_QUEUE, null, { connection: { url }, prefix, lockDuration: LOCK_MS });
    const taken = await dead.getNextJob('dead-process-token');
    expect(taken?.id).toBe(attemptId);
    const diedAt = Date.now();

    // A live worker process (relay, reconciler and queue) starts; the relay's re-publish of the
    // unacknowledged row is ignored while the dead process's job exists.
    live = await startWorkers(
      { db: h.db, runtime: h.runtime, provider: h.provider, logger: silentLogger },
      {
        redisUrl: url,
        prefix,
        queueLockMs: LOCK_MS,
        callTimeoutMs: CALL_TIMEOUT_MS,
        relayPollMs: 100,
        republishAfterMs: 200,
        reconcileEveryMs: 200,
        observeEveryMs: 600_000,
      },
    );
    await waitFor(async () => (await attempt()).state !== 'Pending', {
      timeoutMs: CALL_TIMEOUT_MS + 5_000,
      what: 'the held attempt to be dispatched',
    });
    const recoveredMs = Date.now() - diedAt;
    console.log(`a Pending attempt held by a dead process was dispatched ${recoveredMs} ms after it died`);
    expect(recoveredMs).toBeLessThanOrEqual(CALL_TIMEOUT_MS + 5_000);

    await waitForLease(h, s, (l) => l['state'] === 'Active');
    // Run once: one dispatch, one resource.
    expect(await attempt()).toMatchObject({ state: 'Succeeded', dispatchCount: 1 });
    expect(await h.provider.countResources({ operationId, includeDeleted: true })).toBe(1);
  }, 60_000);
});
