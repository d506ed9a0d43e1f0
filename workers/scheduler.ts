// Periodic maintenance (the reconciler tick, expiry sweeps). A task must be safe to run late, twice,
// or on any process: it works from PostgreSQL state, never from what the previous run remembered.
import type { Logger } from 'pino';
import { createLogger } from '../lib/logger.ts';
import { ABORT_GRACE_MS, settleWithin } from './deadline.ts';
import { DEFAULT_CLOSE_TIMEOUT_MS, type CloseOptions } from './effect-queue.ts';

export interface PeriodicTask {
  /** Unique among the tasks; also the BullMQ job scheduler ID. */
  name: string;
  everyMs: number;
  run(signal: AbortSignal): Promise<void>;
}

export interface Scheduler {
  start(): Promise<void>;
  /** Stops scheduling; running tasks get `timeoutMs` before their signal aborts. */
  close(options?: CloseOptions): Promise<void>;
  /** Why the schedule cannot run right now, for the worker's /readyz; empty when it can. */
  unreadiness(): string[];
}

export function assertTasks(tasks: readonly PeriodicTask[]): void {
  const names = new Set<string>();
  for (const task of tasks) {
    if (names.has(task.name)) throw new Error(`periodic task ${task.name} is declared twice`);
    if (!(Number.isInteger(task.everyMs) && task.everyMs > 0)) {
      throw new Error(`periodic task ${task.name} needs a positive integer everyMs, got ${task.everyMs}`);
    }
    names.add(task.name);
  }
}

/** Embedded mode: timers in this process; a run still going when the next is due is skipped. */
export class InProcessScheduler implements Scheduler {
  private readonly logger: Logger;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Map<string, Promise<void>>();
  private readonly controller = new AbortController();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly tasks: readonly PeriodicTask[],
    options: { logger?: Logger } = {},
  ) {
    assertTasks(tasks);
    this.logger = options.logger ?? createLogger({ name: 'scheduler' });
  }

  start(): Promise<void> {
    if (this.timers.length > 0 || this.closing !== undefined) return Promise.resolve();
    for (const task of this.tasks) {
      const timer = setInterval(() => this.fire(task), task.everyMs);
      timer.unref();
      this.timers.push(timer);
    }
    return Promise.resolve();
  }

  private fire(task: PeriodicTask): void {
    if (this.closing !== undefined || this.running.has(task.name)) return;
    const run = task
      .run(this.controller.signal)
      .catch((error: unknown) => this.logger.warn({ err: error, task: task.name }, 'periodic task failed'))
      .finally(() => this.running.delete(task.name));
    this.running.set(task.name, run);
  }

  unreadiness(): string[] {
    return this.closing === undefined ? [] : ['scheduler is closed'];
  }

  close(options: CloseOptions = {}): Promise<void> {
    this.closing ??= this.shutdown(options.timeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS);
    return this.closing;
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    const all = Promise.all(this.running.values());
    if (await settleWithin(all, timeoutMs)) return;
    this.logger.warn({ running: [...this.running.keys()] }, 'periodic tasks still running; aborting');
    this.controller.abort('shutdown');
    await settleWithin(all, ABORT_GRACE_MS);
  }
}
