// An API-only process (`serve --no-workers` with Redis) runs no processor, relay poll or schedule,
// but the effects it commits reach the queue at once: a provision's attempt is a BullMQ job before
// any relay could have published it, and nothing in this process runs it.
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EFFECTS_QUEUE } from '../../workers/bullmq-effect-queue.ts';
import { startWorkers, type WorkerHost } from '../../workers/host.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario } from '../support/sandbox-flow.ts';
import { deleteKeys, redisUrl, silentLogger, uniquePrefix, waitFor } from './workers-support.ts';

describe('API-only process', () => {
  const prefix = uniquePrefix();
  const url = redisUrl(0);
  let pg: IsolatedPostgres;
  let h: Harness;
  let publisher: WorkerHost;
  let queue: Queue;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { workers: false });
    publisher = await startWorkers(
      { db: h.db, runtime: h.runtime, provider: h.provider, logger: silentLogger },
      // Were a relay polling here, it would publish within 50 ms and stamp published_at; none runs.
      { redisUrl: url, prefix, processEffects: false, relayPollMs: 50 },
    );
    queue = new Queue(EFFECTS_QUEUE, { connection: { url }, prefix });
  });
  afterAll(async () => {
    await queue.close();
    await publisher.close();
    await h.close();
    await deleteKeys(url, prefix);
    await pg.drop();
  });

  it('publishes a committed provision at once and runs nothing itself', async () => {
    const s = await setupScenario(h, { run: 'run-api-only' });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    const lease = await json<{ operationId: string }>(res);
    const { rows } = await h.db.query<{ attemptId: string; publishedAt: Date | null }>(
      `SELECT o.attempt_id AS "attemptId", o.published_at AS "publishedAt"
         FROM outbox o JOIN provider_attempts a USING (attempt_id) WHERE a.operation_id = $1`,
      [lease.operationId],
    );
    const row = rows[0]!;
    await waitFor(async () => (await queue.getJob(row.attemptId)) !== undefined, {
      what: 'the provision job in Redis',
      timeoutMs: 5_000,
    });
    // Published by the hand-off, not by a relay tick (which would have stamped published_at).
    expect(row.publishedAt).toBeNull();
    const outbox = await h.db.query<{ publishedAt: Date | null }>(
      'SELECT published_at AS "publishedAt" FROM outbox WHERE attempt_id = $1',
      [row.attemptId],
    );
    expect(outbox.rows[0]?.publishedAt).toBeNull();
    // Nothing here runs it: the attempt stays Pending until a worker process takes the job.
    const attempt = await h.db.query<{ state: string }>(
      'SELECT state FROM provider_attempts WHERE attempt_id = $1',
      [row.attemptId],
    );
    expect(attempt.rows[0]?.state).toBe('Pending');
    expect(await queue.getJobCounts('waiting', 'active')).toMatchObject({ waiting: 1, active: 0 });
  });
});
