// ioredis clients for BullMQ. We build them ourselves because BullMQ's ESM build cannot load
// ioredis from plain options (it needs `require`), and because the two roles want opposite
// settings: a worker must wait out an outage, a producer must fail fast so the relay keeps the row.
import type { Worker } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { ABORT_GRACE_MS, settleWithin } from './deadline.ts';

// ioredis types `replyMapping` in a way exactOptionalPropertyTypes rejects; we never set it.
type ConnectionOptions = Omit<RedisOptions, 'replyMapping'>;

/** A `redis://` URL (as in `REDIS_URL`) or ioredis options. */
export type RedisTarget = string | ConnectionOptions;

export type RedisRole = 'worker' | 'producer';

const roleOptions: Record<RedisRole, ConnectionOptions> = {
  worker: { maxRetriesPerRequest: null },
  producer: { enableOfflineQueue: false },
};

export function connectRedis(target: RedisTarget, role: RedisRole, logger: Logger): Redis {
  const options = roleOptions[role];
  const client =
    typeof target === 'string' ? new Redis(target, options) : new Redis({ ...target, ...options });
  // Without a listener ioredis would crash the process on every failed reconnect.
  client.on('error', (error: Error) => logger.warn({ err: error, role }, 'redis connection error'));
  return client;
}

/**
 * Why a client cannot carry commands now, or null when it can: ioredis reports `ready` only
 * between a completed handshake and the next drop (`connecting`, `reconnecting`, `end`, ...).
 */
export function redisUnreadiness(client: Redis, what: string): string | null {
  return client.status === 'ready' ? null : `redis connection for ${what} is ${client.status}`;
}

/**
 * Closes a worker, waiting up to `timeoutMs` for active jobs. `close(true)` is no use after
 * `close()`: in bullmq 6.7.0 it returns the first, still waiting, promise. So on timeout we abort
 * the jobs' signals instead, give them a moment to hand their jobs back, then disconnect, and wait
 * no longer than that moment again for the disconnect either.
 */
export async function closeWorker(worker: Worker, timeoutMs: number, logger: Logger): Promise<void> {
  const closing = worker.close();
  closing.catch((error: unknown) => logger.warn({ err: error, queue: worker.name }, 'worker close failed'));
  if (await settleWithin(closing, timeoutMs)) return;
  logger.warn({ queue: worker.name, timeoutMs }, 'jobs still running at shutdown; aborting them');
  worker.cancelAllJobs('shutdown');
  if (await settleWithin(closing, ABORT_GRACE_MS)) return;
  logger.error({ queue: worker.name }, 'jobs ignored their abort signal; disconnecting under them');
  // After Redis dropped and came back, bullmq 6.7.0's close() has waited with no job running, and
  // its disconnect() never settled: bounded too, so shutdown ends within its grace period.
  if (await settleWithin(worker.disconnect(), ABORT_GRACE_MS)) return;
  logger.error({ queue: worker.name }, 'worker did not disconnect; its connections end with the process');
}

/** Closes a BullMQ queue, but never waits longer than ABORT_GRACE_MS for it (see closeWorker). */
export async function closeQueue(
  queue: { name: string; close(): Promise<void> },
  logger: Logger,
): Promise<void> {
  const closing = queue.close();
  closing.catch((error: unknown) => logger.warn({ err: error, queue: queue.name }, 'queue close failed'));
  if (await settleWithin(closing, ABORT_GRACE_MS)) return;
  logger.warn({ queue: queue.name }, 'queue did not close; its connections end with the process');
}
