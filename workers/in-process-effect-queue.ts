// The effect queue of embedded mode: the same contract as BullMQ in one process's memory. Nothing
// here is durable; the outbox relay re-publishes whatever a crash or shutdown left unprocessed.
import type { Logger } from 'pino';
import { createLogger } from '../lib/logger.ts';
import type { SandlotMetrics } from '../lib/metrics.ts';
import { ABORT_GRACE_MS, settleWithin } from './deadline.ts';
import {
  DEFAULT_CLOSE_TIMEOUT_MS,
  EFFECT_ATTEMPTS,
  distinctJobs,
  type CloseOptions,
  type EffectJob,
  type EffectProcessor,
  type EffectQueue,
} from './effect-queue.ts';
import { QueueClosedError } from './errors.ts';

export interface InProcessEffectQueueOptions {
  /** Jobs run at once (default 4). */
  concurrency?: number;
  /** First retry delay after a processor error, doubled each time (default 50 ms). */
  backoffMs?: number;
  logger?: Logger;
  /** Observes each job's wait from publish to its first start. */
  metrics?: Pick<SandlotMetrics, 'jobWaitSeconds'>;
}

interface Entry extends EffectJob {
  attempt: number;
  /** performance.now() at publish. */
  queuedAt: number;
}

export class InProcessEffectQueue implements EffectQueue {
  private readonly concurrency: number;
  private readonly backoffMs: number;
  private readonly logger: Logger;
  private readonly waiting: Entry[] = [];
  /** Attempts waiting, backing off or running: a publish of one of these is a duplicate. */
  private readonly known = new Set<string>();
  private readonly running = new Map<string, AbortController>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private processor: EffectProcessor | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: InProcessEffectQueueOptions = {}) {
    this.concurrency = options.concurrency ?? 4;
    this.backoffMs = options.backoffMs ?? 50;
    this.logger = options.logger ?? createLogger({ name: 'effect-queue' });
  }

  /** Jobs waiting, running, and backing off before a retry (the queue depth gauge). */
  depth(): { waiting: number; active: number; delayed: number } {
    return { waiting: this.waiting.length, active: this.running.size, delayed: this.retryTimers.size };
  }

  publish(jobs: readonly EffectJob[]): Promise<void> {
    if (this.closing !== undefined) return Promise.reject(new QueueClosedError('effect queue'));
    let distinct: EffectJob[];
    try {
      distinct = distinctJobs(jobs);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    for (const job of distinct) {
      if (this.known.has(job.attemptId)) continue;
      this.known.add(job.attemptId);
      this.waiting.push({ ...job, attempt: 1, queuedAt: performance.now() });
    }
    // Deferred so a publish from inside a transaction returns before any processor starts.
    setImmediate(() => this.pump());
    return Promise.resolve();
  }

  start(processor: EffectProcessor): void {
    if (this.closing !== undefined) throw new QueueClosedError('effect queue');
    if (this.processor !== undefined) throw new Error('effect queue already started');
    this.processor = processor;
    this.pump();
  }

  private pump(): void {
    const processor = this.processor;
    if (processor === undefined) return;
    // `execute` registers itself in `running` before its first await, so the bound holds.
    while (this.closing === undefined && this.running.size < this.concurrency) {
      const entry = this.waiting.shift();
      if (entry === undefined) return;
      const execution = this.execute(processor, entry);
      this.inflight.add(execution);
      void execution.finally(() => this.inflight.delete(execution));
    }
  }

  /** Never rejects; all bookkeeping after the processor happens synchronously, so it cannot race. */
  private async execute(processor: EffectProcessor, entry: Entry): Promise<void> {
    const controller = new AbortController();
    this.running.set(entry.attemptId, controller);
    if (entry.attempt === 1) {
      const waited = (performance.now() - entry.queuedAt) / 1000;
      this.options.metrics?.jobWaitSeconds.observe({ queue: 'effects' }, waited);
    }
    let failed = false;
    let failure: unknown;
    try {
      const { attemptId, environmentId, traceContext } = entry;
      await processor(
        {
          attemptId,
          ...(environmentId === undefined ? {} : { environmentId }),
          ...(traceContext === undefined ? {} : { traceContext }),
        },
        controller.signal,
      );
    } catch (error) {
      failed = true;
      failure = error;
    }
    this.running.delete(entry.attemptId);
    const retry = failed && entry.attempt < EFFECT_ATTEMPTS && this.closing === undefined;
    if (failed) {
      const level = retry ? 'warn' : 'error';
      this.logger[level]({ err: failure, ...entry, retry }, 'effect job failed');
    }
    if (retry) this.retryLater({ ...entry, attempt: entry.attempt + 1 });
    else this.known.delete(entry.attemptId);
    this.pump();
  }

  private retryLater(entry: Entry): void {
    const timer = setTimeout(
      () => {
        this.retryTimers.delete(timer);
        this.waiting.push(entry);
        this.pump();
      },
      this.backoffMs * 2 ** (entry.attempt - 2),
    );
    timer.unref();
    this.retryTimers.add(timer);
  }

  unreadiness(): string[] {
    return this.closing === undefined ? [] : ['effect queue is closed'];
  }

  close(options: CloseOptions = {}): Promise<void> {
    this.closing ??= this.shutdown(options.timeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
    return this.closing;
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.retryTimers.clear();
    this.waiting.length = 0;
    const all = Promise.all(this.inflight);
    if (await settleWithin(all, timeoutMs)) return;
    this.logger.warn({ running: [...this.running.keys()], timeoutMs }, 'effects still running; aborting');
    for (const controller of this.running.values()) controller.abort('shutdown');
    if (!(await settleWithin(all, ABORT_GRACE_MS))) {
      this.logger.error({ running: [...this.running.keys()] }, 'effects ignored their abort signal');
    }
  }
}
