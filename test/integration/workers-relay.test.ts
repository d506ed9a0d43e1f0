// The outbox relay against real PostgreSQL and Redis. The flush case runs on Redis logical db 5
// and uses FLUSHDB, which (unlike FLUSHALL) leaves the other databases and test files alone.
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { BullmqEffectQueue } from '../../workers/bullmq-effect-queue.ts';
import type { EffectProcessor } from '../../workers/effect-queue.ts';
import { PublishTimeoutError } from '../../workers/errors.ts';
import { InProcessEffectQueue } from '../../workers/in-process-effect-queue.ts';
import { acknowledgeAttempt, OutboxRelay } from '../../workers/outbox-relay.ts';
import { backends, isolatedPostgres, openBackend, type IsolatedPostgres } from '../support/databases.ts';
import { delay, deleteKeys, redisUrl, silentLogger, uniquePrefix, waitFor } from './workers-support.ts';

const FLUSHED_DB = 5;

async function prepare(db: Database, environments: string[]): Promise<void> {
  await migrate(db);
  await db.exec('CREATE TABLE IF NOT EXISTS processed (attempt_id text PRIMARY KEY)');
  for (const id of environments) {
    await db.query(
      `INSERT INTO environments (environment_id, tenant_id, project_id, run_id, idempotency_key,
         run_selection_hash, machine_version, snapshot, revision, lifecycle_state, lifecycle_generation, created_by)
       VALUES ($1, 't', 'p', $1, 'k', 'h', 1, '{}', 1, 'Registered', 1, 'test')`,
      [id],
    );
  }
}

interface Seed {
  attemptId: string | null;
  published?: 'now' | 'long-ago';
  acknowledged?: boolean;
}

async function insertOutbox(q: Queryable, environmentId: string, seeds: Seed[]): Promise<void> {
  for (const seed of seeds) {
    await q.query(
      `INSERT INTO outbox (environment_id, revision, kind, payload, attempt_id, published_at, acknowledged_at)
       VALUES ($1, 1, 'provider.provision', '{}', $2,
         CASE $3::text WHEN 'now' THEN now() WHEN 'long-ago' THEN now() - interval '1 hour' END,
         CASE WHEN $4::boolean THEN now() END)`,
      [environmentId, seed.attemptId, seed.published ?? null, seed.acknowledged === true],
    );
  }
}

async function count(q: Queryable, sql: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`);
  return rows[0]?.n ?? -1;
}

/** The attempt processor stand-in: records the attempt and acknowledges it in one transaction. */
function processorFor(db: Database, onCommitted: () => void = () => undefined): EffectProcessor {
  return async ({ attemptId }) => {
    await delay(5);
    await db.transaction(async (tx) => {
      await tx.query('INSERT INTO processed (attempt_id) VALUES ($1) ON CONFLICT DO NOTHING', [attemptId]);
      await acknowledgeAttempt(tx, attemptId);
    });
    onCommitted();
  };
}

describe('outbox relay with BullMQ (PostgreSQL, Redis)', () => {
  let pg: IsolatedPostgres;
  let db: Database;
  const prefix = uniquePrefix();

  beforeAll(async () => {
    pg = await isolatedPostgres();
    db = pg.open();
    await prepare(db, ['env-a', 'env-b', 'env-c', 'env-d']);
  });
  afterAll(async () => {
    await deleteKeys(redisUrl(FLUSHED_DB), prefix);
    await pg.drop();
  });

  it(`processes all 200 attempts although Redis db ${FLUSHED_DB} is flushed midway`, async () => {
    const envs = ['env-a', 'env-b', 'env-c', 'env-d'];
    await db.transaction(async (tx) => {
      for (let i = 0; i < 200; i += 1) {
        await insertOutbox(tx, envs[i % 4] ?? 'env-a', [{ attemptId: `flush-${i}` }]);
      }
    });
    const url = redisUrl(FLUSHED_DB);
    let committed = 0;
    const worker = new BullmqEffectQueue({ redis: url, prefix, concurrency: 4, logger: silentLogger });
    worker.start(processorFor(db, () => (committed += 1)));
    // Two relays on two pools, as two processes would run them.
    const relays = [db, pg.open()].map((relayDb) => {
      const queue = new BullmqEffectQueue({ redis: url, prefix, logger: silentLogger });
      const relay = new OutboxRelay({
        db: relayDb,
        queue,
        republishAfterMs: 300,
        pollIntervalMs: 100,
        batchSize: 64,
        logger: silentLogger,
      });
      return { relay, queue };
    });
    const redis = new Redis(url);
    try {
      for (const { relay } of relays) relay.start();
      // Every row published before the flush, so any publish after it is a re-publish.
      const unpublished = "outbox WHERE attempt_id LIKE 'flush-%' AND published_at IS NULL";
      await waitFor(async () => committed >= 50 && (await count(db, unpublished)) === 0, {
        intervalMs: 5,
        what: '50 processed',
      });
      await redis.flushdb();
      const flushedAt = new Date();
      const processedAtFlush = await count(db, 'processed');
      expect(processedAtFlush).toBeLessThan(200);

      await waitFor(async () => (await count(db, 'processed')) === 200, {
        timeoutMs: 20_000,
        what: 'all 200',
      });
      await waitFor(async () => (await count(db, 'outbox WHERE acknowledged_at IS NULL')) === 0, {
        what: 'all acknowledged',
      });
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM outbox WHERE published_at > $1',
        [flushedAt],
      );
      // The flush lost queued jobs, and the relay published them again.
      expect(rows[0]?.n).toBeGreaterThan(0);
    } finally {
      for (const { relay, queue } of relays) {
        await relay.stop();
        await queue.close();
      }
      await worker.close({ timeoutMs: 2_000 });
      redis.disconnect();
    }
  });

  it('leaves rows unpublished when Redis cannot be reached', async () => {
    const port = await closedPort();
    const queue = new BullmqEffectQueue({
      redis: `redis://127.0.0.1:${port}/${FLUSHED_DB}`,
      prefix,
      publishTimeoutMs: 300,
      logger: silentLogger,
    });
    const relay = new OutboxRelay({ db, queue, logger: silentLogger });
    try {
      await insertOutbox(db, 'env-a', [{ attemptId: 'down-1' }, { attemptId: 'down-2' }]);
      await expect(relay.tick()).rejects.toBeInstanceOf(PublishTimeoutError);
      expect(await count(db, `outbox WHERE attempt_id LIKE 'down-%' AND published_at IS NULL`)).toBe(2);
      // The low-latency path swallows the failure: the rows are still due for the relay.
      await relay.publishNow([
        {
          outboxId: 0,
          environmentId: 'env-a',
          revision: 1,
          kind: 'k',
          payload: {},
          attemptId: 'down-1',
          traceContext: null,
        },
      ]);
    } finally {
      await queue.close({ timeoutMs: 500 });
    }
  });
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe.each(backends)('outbox relay tick (%s)', (backend) => {
  let db: Database;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const handle = await openBackend(backend);
    db = handle.db;
    close = () => handle.close();
    await prepare(db, ['env-r']);
  });
  afterAll(() => close());
  // Each case starts with nothing due, whatever the previous one left behind.
  beforeEach(() => db.exec('UPDATE outbox SET acknowledged_at = now() WHERE acknowledged_at IS NULL'));

  it('publishes due attempts once per attempt and never republishes acknowledged rows', async () => {
    const runs: string[] = [];
    const queue = new InProcessEffectQueue({ logger: silentLogger });
    queue.start(async (job, signal) => {
      runs.push(job.attemptId);
      await processorFor(db)(job, signal);
    });
    const relay = new OutboxRelay({ db, queue, republishAfterMs: 60_000, logger: silentLogger });
    try {
      await insertOutbox(db, 'env-r', [
        { attemptId: 'due-1' },
        { attemptId: 'due-1' },
        { attemptId: 'stale-1', published: 'long-ago' },
        { attemptId: 'recent-1', published: 'now' },
        { attemptId: 'acked-1', acknowledged: true },
        { attemptId: 'acked-2', published: 'long-ago', acknowledged: true },
        { attemptId: null },
        { attemptId: '12345' },
      ]);
      // The row with an attempt ID BullMQ cannot take is skipped, not allowed to block the batch.
      expect(await relay.tick()).toBe(4);
      await waitFor(() => runs.length === 2, { what: 'two runs' });
      expect([...runs].sort()).toEqual(['due-1', 'stale-1']);
      await waitFor(
        async () =>
          (await count(
            db,
            `outbox WHERE attempt_id IN ('due-1', 'stale-1')
        AND acknowledged_at IS NOT NULL`,
          )) === 3,
      );
      expect(await relay.tick()).toBe(0);
      await delay(50);
      expect(runs).toHaveLength(2);
      expect(await count(db, `processed WHERE attempt_id LIKE 'acked-%'`)).toBe(0);
    } finally {
      await queue.close();
    }
  });

  it('republishes a published row its worker never acknowledged', async () => {
    const runs: string[] = [];
    const queue = new InProcessEffectQueue({ logger: silentLogger });
    // A worker that loses every job: nothing is acknowledged.
    queue.start(async ({ attemptId }) => {
      runs.push(attemptId);
      await Promise.resolve();
    });
    const relay = new OutboxRelay({ db, queue, republishAfterMs: 200, logger: silentLogger });
    try {
      await insertOutbox(db, 'env-r', [{ attemptId: 'lost-1' }]);
      expect(await relay.tick()).toBe(1);
      expect(await relay.tick()).toBe(0);
      await delay(300);
      expect(await relay.tick()).toBe(1);
      await waitFor(() => runs.length === 2);
    } finally {
      await queue.close();
    }
  });
});
