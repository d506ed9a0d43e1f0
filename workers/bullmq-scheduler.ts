// Periodic tasks through BullMQ job schedulers on the `maintenance` queue: every process may
// upsert the same schedulers (upsert is idempotent by ID) and any one worker runs each due job,
// so N processes still run a task about once per period, not N times.
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createLogger } from '../lib/logger.ts';
import { DEFAULT_CLOSE_TIMEOUT_MS, type CloseOptions } from './effect-queue.ts';
import { QueueClosedError } from './errors.ts';
import { closeQueue, closeWorker, connectRedis, redisUnreadiness, type RedisTarget } from './redis.ts';
import { assertTasks, type PeriodicTask, type Scheduler } from './scheduler.ts';

export const MAINTENANCE_QUEUE = 'maintenance';

export interface BullmqSchedulerOptions {
  redis: RedisTarget;
  /** Redis key prefix (default `sandlot`). */
  prefix?: string;
  tasks: readonly PeriodicTask[];
  logger?: Logger;
}

export class BullmqScheduler implements Scheduler {
  private readonly logger: Logger;
  private readonly prefix: string;
  private readonly tasks: ReadonlyMap<string, PeriodicTask>;
  private readonly redis: Redis;
  private readonly queue: Queue;
  private worker: Worker | undefined;
  private closing: Promise<void> | undefined;
  private reassert: NodeJS.Timeout | undefined;

  constructor(options: BullmqSchedulerOptions) {
    assertTasks(options.tasks);
    this.logger = options.logger ?? createLogger({ name: 'scheduler' });
    this.prefix = options.prefix ?? 'sandlot';
    this.tasks = new Map(options.tasks.map((task) => [task.name, task]));
    // Upserts wait for Redis at start-up rather than fail, so one connection serves both roles.
    this.redis = connectRedis(options.redis, 'worker', this.logger);
    this.queue = new Queue(MAINTENANCE_QUEUE, { connection: this.redis, prefix: this.prefix });
    this.queue.on('error', (error) => this.logger.warn({ err: error }, 'maintenance queue error'));
  }

  private async upsertAll(): Promise<void> {
    for (const task of this.tasks.values()) {
      await this.queue.upsertJobScheduler(
        task.name,
        { every: task.everyMs },
        { name: task.name, opts: { removeOnComplete: true, removeOnFail: 100 } },
      );
    }
  }

  async start(): Promise<void> {
    if (this.closing !== undefined) throw new QueueClosedError('scheduler');
    if (this.worker !== undefined) return;
    await this.upsertAll();
    // A flushed or restarted Redis (no persistence) forgets the schedules; every process puts
    // them back on its own timer, so reconciliation never stops for want of a restart.
    const everyMs = Math.max(1_000, Math.min(...[...this.tasks.values()].map((t) => t.everyMs)) * 2);
    this.reassert = setInterval(() => {
      this.upsertAll().catch((error: unknown) =>
        this.logger.warn({ err: error }, 'could not re-assert schedules'),
      );
    }, everyMs);
    this.reassert.unref();
    // Three declared parameters, so BullMQ hands us the job's AbortSignal.
    const worker = new Worker(MAINTENANCE_QUEUE, (job, _token, signal) => this.dispatch(job, signal), {
      connection: this.redis,
      prefix: this.prefix,
      concurrency: 1,
    });
    worker.on('lockRenewalFailed', (ids) => {
      for (const id of ids) worker.cancelJob(id, 'lock-lost');
    });
    worker.on('failed', (job, error) =>
      this.logger.warn({ err: error, task: job?.name }, 'periodic task failed'),
    );
    worker.on('error', (error) => this.logger.warn({ err: error }, 'maintenance worker error'));
    this.worker = worker;
  }

  private async dispatch(job: Job, signal: AbortSignal | undefined): Promise<void> {
    const task = this.tasks.get(job.name);
    if (task === undefined) {
      // Another deployment's schedule (a renamed or removed task): not ours to fail or remove.
      this.logger.warn({ task: job.name }, 'no periodic task by that name in this process');
      return;
    }
    await task.run(signal ?? new AbortController().signal);
  }

  unreadiness(): string[] {
    if (this.closing !== undefined) return ['scheduler is closed'];
    const problems = [redisUnreadiness(this.redis, 'the schedule')];
    if (this.worker?.isRunning() !== true) problems.push('scheduler worker is not running');
    return problems.filter((p) => p !== null);
  }

  close(options: CloseOptions = {}): Promise<void> {
    this.closing ??= this.shutdown(options.timeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
    return this.closing;
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    clearInterval(this.reassert);
    if (this.worker !== undefined) await closeWorker(this.worker, timeoutMs, this.logger);
    await closeQueue(this.queue, this.logger);
    this.redis.disconnect();
  }
}
