// Starts the worker side in this process: the effect queue (BullMQ when Redis is configured,
// in-process otherwise: the same processor either way), the outbox relay, and the reconciler on a
// schedule. `handOff` is the runtime's after-commit fast path; the relay is the guarantee.
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Services } from '../actors/services.ts';
import type { SandboxProvider } from '../providers/provider.ts';
import type { Database } from '../store/db.ts';
import { BullmqEffectQueue } from './bullmq-effect-queue.ts';
import { BullmqScheduler } from './bullmq-scheduler.ts';
import { effectProcessor } from './effect-processor.ts';
import type { EffectQueue } from './effect-queue.ts';
import { InProcessEffectQueue } from './in-process-effect-queue.ts';
import { OutboxRelay } from './outbox-relay.ts';
import { observerTask } from './observer.ts';
import { reconcilerTask } from './reconciler.ts';
import { InProcessScheduler, type Scheduler } from './scheduler.ts';

export interface WorkerSettings {
  redisUrl?: string;
  /** BullMQ key prefix (default `sandlot`). */
  prefix?: string;
  concurrency?: number;
  callTimeoutMs?: number;
  reconcileEveryMs?: number;
  /** Period of the observer that describes Active leases (default 15 s). */
  observeEveryMs?: number;
  republishAfterMs?: number;
  relayPollMs?: number;
  /** Run effect processors here (false: an API-only process that only publishes). */
  processEffects?: boolean;
}

export interface WorkerHost {
  queue: EffectQueue;
  relay: OutboxRelay;
  close(): Promise<void>;
}

export async function startWorkers(
  deps: { db: Database; services: Services; provider: SandboxProvider; logger: Logger },
  settings: WorkerSettings = {},
): Promise<WorkerHost> {
  const logger = deps.logger.child({ component: 'workers' });
  const actor = `worker:${hostname()}:${process.pid}`;
  const queue: EffectQueue =
    settings.redisUrl === undefined
      ? new InProcessEffectQueue({ concurrency: settings.concurrency ?? 4, logger })
      : new BullmqEffectQueue({
          redis: settings.redisUrl,
          prefix: settings.prefix ?? 'sandlot',
          concurrency: settings.concurrency ?? 8,
          logger,
        });
  const relay = new OutboxRelay({
    db: deps.db,
    queue,
    logger,
    republishAfterMs: settings.republishAfterMs ?? 5_000,
    pollIntervalMs: settings.relayPollMs ?? 1_000,
  });
  const attemptDeps = { db: deps.db, runtime: deps.services.runtime, actor };
  if (settings.processEffects !== false) {
    queue.start(
      effectProcessor({
        ...attemptDeps,
        provider: deps.provider,
        logger,
        callTimeoutMs: settings.callTimeoutMs ?? 30_000,
      }),
    );
  }
  const tasks = [
    reconcilerTask({ ...attemptDeps, logger }, settings.reconcileEveryMs ?? 5_000),
    observerTask(
      {
        ...attemptDeps,
        provider: deps.provider,
        logger,
        describeTimeoutMs: settings.callTimeoutMs ?? 30_000,
      },
      settings.observeEveryMs ?? 15_000,
    ),
  ];
  const scheduler: Scheduler =
    settings.redisUrl === undefined
      ? new InProcessScheduler(tasks, { logger })
      : new BullmqScheduler({
          redis: settings.redisUrl,
          prefix: settings.prefix ?? 'sandlot',
          tasks,
          logger,
        });
  deps.services.setEffectSink((rows) => void relay.publishNow(rows));
  relay.start();
  await scheduler.start();
  logger.info({ transport: settings.redisUrl === undefined ? 'in-process' : 'bullmq' }, 'workers started');
  return {
    queue,
    relay,
    async close() {
      deps.services.setEffectSink(() => undefined);
      await scheduler.close();
      await relay.stop();
      await queue.close();
    },
  };
}
