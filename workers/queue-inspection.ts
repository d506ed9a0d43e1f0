// Read-side handles on the BullMQ queues (effects, maintenance) for the metrics scrape and the
// queue dashboard. One producer-role connection: a scrape while Redis is down fails at once (and is
// counted) instead of waiting in an offline queue. Nothing here adds or runs jobs.
import { Queue } from 'bullmq';
import type { Logger } from 'pino';
import { EFFECTS_QUEUE } from './bullmq-effect-queue.ts';
import { MAINTENANCE_QUEUE } from './bullmq-scheduler.ts';
import type { InProcessEffectQueue } from './in-process-effect-queue.ts';
import { connectRedis, type RedisTarget } from './redis.ts';

/** The job states the queue gauge reports. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

export interface QueueJobCount {
  queue: string;
  state: string;
  count: number;
}

export interface QueueInspection {
  queues: readonly Queue[];
  jobCounts(): Promise<QueueJobCount[]>;
  close(): Promise<void>;
}

export function inspectQueues(redis: RedisTarget, prefix: string, logger: Logger): QueueInspection {
  const connection = connectRedis(redis, 'producer', logger);
  const queues = [EFFECTS_QUEUE, MAINTENANCE_QUEUE].map((name) => {
    const queue = new Queue(name, { connection, prefix });
    queue.on('error', (error) => logger.debug({ err: error, queue: name }, 'queue inspection error'));
    return queue;
  });
  return {
    queues,
    async jobCounts() {
      const counted = await Promise.all(
        queues.map(async (queue) => ({
          queue: queue.name,
          counts: await queue.getJobCounts(...QUEUE_STATES),
        })),
      );
      return counted.flatMap(({ queue, counts }) =>
        QUEUE_STATES.map((state) => ({ queue, state, count: counts[state] ?? 0 })),
      );
    },
    async close() {
      await Promise.all(queues.map((queue) => queue.close().catch(() => undefined)));
      connection.disconnect();
    },
  };
}

/** The embedded queue's depth, in the same shape (it has no failed set: failures are logged). */
export function inProcessJobCounts(queue: InProcessEffectQueue): QueueJobCount[] {
  const { waiting, active, delayed } = queue.depth();
  return [
    { queue: EFFECTS_QUEUE, state: 'waiting', count: waiting },
    { queue: EFFECTS_QUEUE, state: 'active', count: active },
    { queue: EFFECTS_QUEUE, state: 'delayed', count: delayed },
  ];
}
