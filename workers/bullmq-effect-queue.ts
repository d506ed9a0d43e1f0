// The production effect queue. The job ID is the attempt ID, so BullMQ itself drops a publish for
// an attempt that is already waiting or running; completed jobs are removed at once so that a
// re-publish after completion (the relay after a lost ack) runs again instead of being swallowed.
import { DelayedError, Queue, Worker, type Job, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createLogger } from '../lib/logger.ts';
import type { SandlotMetrics } from '../lib/metrics.ts';
import {
  DEFAULT_CLOSE_TIMEOUT_MS,
  EFFECT_ATTEMPTS,
  distinctJobs,
  type CloseOptions,
  type EffectJob,
  type EffectProcessor,
  type EffectQueue,
} from './effect-queue.ts';
import { withTimeout } from './deadline.ts';
import { PublishTimeoutError, QueueClosedError } from './errors.ts';
import { closeQueue, closeWorker, connectRedis, redisUnreadiness, type RedisTarget } from './redis.ts';

export const EFFECTS_QUEUE = 'effects';
export const DEFAULT_LOCK_DURATION_MS = 5_000;

export interface BullmqEffectQueueOptions {
  redis: RedisTarget;
  /** Redis key prefix (default `sandlot`); tests use one per file. */
  prefix?: string;
  /** Jobs run at once by this process (default 8). */
  concurrency?: number;
  /** How long a publish may wait for Redis before failing (default 5 s). */
  publishTimeoutMs?: number;
  /** First retry delay after a processor error, doubled each time (default 1 s). */
  backoffMs?: number;
  /**
   * BullMQ lock duration (default 5 s); the lock is renewed at half of it, and every live worker
   * checks for stalled jobs as often. A job held by a process that died is back in the queue within
   * about twice this, so a Pending attempt it held waits seconds, not the minute BullMQ's 30 s
   * defaults cost. Re-running a job is harmless: begin dispatches only a Pending attempt, never a
   * Dispatched one (those go to the reconciler after their deadline).
   */
  lockDurationMs?: number;
  logger?: Logger;
  /** Observes each job's wait from publish to its first start. */
  metrics?: Pick<SandlotMetrics, 'jobWaitSeconds'>;
}

export class BullmqEffectQueue implements EffectQueue {
  private readonly logger: Logger;
  private readonly producer: Redis;
  private readonly queue: Queue<EffectJob>;
  private readonly jobOptions: JobsOptions;
  private workerRedis: Redis | undefined;
  private worker: Worker<EffectJob> | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: BullmqEffectQueueOptions) {
    this.logger = options.logger ?? createLogger({ name: 'effect-queue' });
    this.producer = connectRedis(options.redis, 'producer', this.logger);
    this.queue = new Queue<EffectJob>(EFFECTS_QUEUE, { connection: this.producer, prefix: this.prefix });
    this.queue.on('error', (error) => this.logger.warn({ err: error }, 'effect queue error'));
    this.jobOptions = {
      attempts: EFFECT_ATTEMPTS,
      backoff: { type: 'exponential', delay: options.backoffMs ?? 1_000 },
      removeOnComplete: true,
      // Not kept: a kept failed job would swallow the relay's re-publish of a still-Pending attempt
      // (BullMQ ignores an add whose ID exists). Failures are logged; PostgreSQL keeps the attempt.
      removeOnFail: true,
    };
  }

  private get lockDurationMs(): number {
    return this.options.lockDurationMs ?? DEFAULT_LOCK_DURATION_MS;
  }

  private get prefix(): string {
    return this.options.prefix ?? 'sandlot';
  }

  async publish(jobs: readonly EffectJob[]): Promise<void> {
    if (this.closing !== undefined) throw new QueueClosedError('effect queue');
    const distinct = distinctJobs(jobs);
    if (distinct.length === 0) return;
    const timeoutMs = this.options.publishTimeoutMs ?? 5_000;
    const adding = (async () => {
      // Before the first connection BullMQ waits for Redis indefinitely; the timeout bounds that.
      await this.queue.waitUntilReady();
      await this.queue.addBulk(
        distinct.map((job) => ({
          name: 'effect',
          data: job,
          opts: { ...this.jobOptions, jobId: job.attemptId },
        })),
      );
    })();
    await withTimeout(adding, timeoutMs, () => new PublishTimeoutError(timeoutMs));
  }

  start(processor: EffectProcessor): void {
    if (this.closing !== undefined) throw new QueueClosedError('effect queue');
    if (this.worker !== undefined) throw new Error('effect queue already started');
    this.workerRedis = connectRedis(this.options.redis, 'worker', this.logger);
    // Declared with three parameters on purpose: BullMQ creates the job's AbortSignal only for a
    // processor whose `length` is at least 3.
    const worker = new Worker<EffectJob>(
      EFFECTS_QUEUE,
      (job, token, signal) => this.run(processor, job, token, signal),
      {
        connection: this.workerRedis,
        prefix: this.prefix,
        concurrency: this.options.concurrency ?? 8,
        lockDuration: this.lockDurationMs,
        stalledInterval: this.lockDurationMs,
        // A stalled job is only ever re-run (begin is idempotent): never fail it for stalling.
        maxStalledCount: 1_000,
      },
    );
    // v6 only reports a lost lock; another worker may now run the same job, so stop ours.
    worker.on('lockRenewalFailed', (ids) => {
      for (const id of ids) worker.cancelJob(id, 'lock-lost');
    });
    worker.on('failed', (job, error) =>
      this.logger.warn(
        { err: error, attemptId: job?.id, attemptsMade: job?.attemptsMade },
        'effect job failed',
      ),
    );
    worker.on('error', (error) => this.logger.warn({ err: error }, 'effect worker error'));
    this.worker = worker;
  }

  private async run(
    processor: EffectProcessor,
    job: Job<EffectJob>,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const jobSignal = signal ?? new AbortController().signal;
    if (job.attemptsMade === 0) {
      const waited = Math.max(0, Date.now() - job.timestamp - (job.opts.delay ?? 0)) / 1000;
      this.options.metrics?.jobWaitSeconds.observe({ queue: EFFECTS_QUEUE }, waited);
    }
    try {
      const { attemptId, environmentId, traceContext } = job.data;
      await processor(
        {
          attemptId,
          ...(typeof environmentId === 'string' ? { environmentId } : {}),
          ...(typeof traceContext === 'string' ? { traceContext } : {}),
        },
        jobSignal,
      );
    } catch (error) {
      if (jobSignal.aborted && this.closing !== undefined && token !== undefined) {
        // Shutdown interrupted the job: hand it back for another worker without spending one of
        // its attempts (a failed job would swallow the relay's re-publishes for an hour).
        await job.moveToDelayed(Date.now(), token);
        throw new DelayedError();
      }
      throw error;
    }
  }

  unreadiness(): string[] {
    if (this.closing !== undefined) return ['effect queue is closed'];
    const problems = [redisUnreadiness(this.producer, 'effect publishing')];
    if (this.workerRedis !== undefined) {
      problems.push(redisUnreadiness(this.workerRedis, 'effect processing'));
      if (this.worker?.isRunning() !== true) problems.push('effect worker is not running');
    }
    return problems.filter((p) => p !== null);
  }

  close(options: CloseOptions = {}): Promise<void> {
    this.closing ??= this.shutdown(options.timeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
    return this.closing;
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    if (this.worker !== undefined) await closeWorker(this.worker, timeoutMs, this.logger);
    await closeQueue(this.queue, this.logger);
    // BullMQ leaves connections it was given open; these are ours.
    this.workerRedis?.disconnect();
    this.producer.disconnect();
  }
}
