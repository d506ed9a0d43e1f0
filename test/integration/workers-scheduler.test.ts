// Periodic tasks: BullMQ job schedulers on real Redis (db 0, own prefix) and the in-process timers.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { BullmqScheduler, MAINTENANCE_QUEUE } from '../../workers/bullmq-scheduler.ts';
import { InProcessScheduler, type PeriodicTask } from '../../workers/scheduler.ts';
import { closeAll, installShutdownHandlers } from '../../cli/shutdown.ts';
import { delay, deleteKeys, redisUrl, silentLogger, uniquePrefix, waitFor } from './workers-support.ts';

const url = redisUrl(0);
const prefix = uniquePrefix();
afterAll(() => deleteKeys(url, prefix));

function counting(
  name: string,
  everyMs: number,
  work: (signal: AbortSignal) => Promise<void> = () => delay(1),
) {
  const runs: number[] = [];
  const task: PeriodicTask = {
    name,
    everyMs,
    async run(signal) {
      runs.push(Date.now());
      await work(signal);
    },
  };
  return { task, runs };
}

/**
 * The due times of the scheduled jobs of `task` that went active, in order, read from the queue's
 * event stream: a job scheduler's job ID is `repeat:<task>:<due ms>`. This is what the schedule
 * asked for, independent of how late a loaded machine ran it.
 */
async function startedSlots(queue: Queue, connection: Redis, task: string): Promise<number[]> {
  const entries = await connection.xrange(queue.keys['events'] ?? '', '-', '+');
  return entries.flatMap(([, fields]) => {
    const field = (name: string) => fields[fields.indexOf(name) + 1];
    const slot = /^repeat:(.+):(\d+)$/.exec(field('jobId') ?? '');
    return field('event') === 'active' && slot?.[1] === task ? [Number(slot[2])] : [];
  });
}

/** Each slot is later than the one before by a whole number of periods: one grid, no slot twice. */
function expectOneGrid(slots: readonly number[], everyMs: number): void {
  const gaps = slots.slice(1).map((slot, i) => slot - (slots[i] ?? 0));
  for (const gap of gaps) {
    expect(gap).toBeGreaterThan(0);
    expect(gap % everyMs).toBe(0);
  }
}

describe('bullmq scheduler', () => {
  it('runs a task on its 200 ms schedule and stops after close', async () => {
    const { task, runs } = counting('reconcile', 200);
    const options = { redis: url, prefix: `${prefix}-a`, logger: silentLogger };
    const scheduler = new BullmqScheduler({ ...options, tasks: [task] });
    const connection = new Redis(url);
    const queue = new Queue(MAINTENANCE_QUEUE, { connection, prefix: options.prefix });
    // Another process with the same schedule, started once the first has closed.
    const { task: witnessTask, runs: witnessRuns } = counting('reconcile', 200);
    const witness = new BullmqScheduler({ ...options, tasks: [witnessTask] });
    try {
      await scheduler.start();
      await waitFor(() => runs.length >= 5, { timeoutMs: 10_000, what: 'five runs' });
      await scheduler.close({ timeoutMs: 1_000 });
      const seen = runs.length;
      // Every run was one job of the schedule, each due one or more whole periods after the last.
      const slots = await startedSlots(queue, connection, 'reconcile');
      expect(slots).toHaveLength(seen);
      expectOneGrid(slots, 200);

      // The schedule outlives the process; another one keeps running it, this one runs nothing.
      await witness.start();
      await waitFor(() => witnessRuns.length >= 2, { timeoutMs: 10_000, what: 'the witness runs' });
      expect(runs.length).toBe(seen);
    } finally {
      await witness.close({ timeoutMs: 1_000 });
      await scheduler.close({ timeoutMs: 1_000 });
      await queue.close();
      connection.disconnect();
    }
  });

  it('upserting the same task twice keeps one schedule', async () => {
    const { task, runs } = counting('sweep', 200);
    const options = { redis: url, prefix: `${prefix}-b`, tasks: [task], logger: silentLogger };
    // Two processes starting at once, as in a deployment.
    const schedulers = [new BullmqScheduler(options), new BullmqScheduler(options)];
    const connection = new Redis(url);
    const queue = new Queue(MAINTENANCE_QUEUE, { connection, prefix: `${prefix}-b` });
    try {
      await Promise.all(schedulers.map((s) => s.start()));
      expect(await queue.getJobSchedulersCount()).toBe(1);
      expect((await queue.getJobSchedulers()).map((s) => [s.key, s.every])).toEqual([['sweep', 200]]);
      await waitFor(() => runs.length >= 5, { timeoutMs: 10_000, what: 'five runs' });
      await Promise.all(schedulers.map((s) => s.close({ timeoutMs: 1_000 })));
      // One schedule: across both workers, each run is one slot of one 200 ms grid, none run twice.
      const slots = await startedSlots(queue, connection, 'sweep');
      expect(slots).toHaveLength(runs.length);
      expectOneGrid(slots, 200);
    } finally {
      await Promise.all(schedulers.map((s) => s.close({ timeoutMs: 1_000 })));
      await queue.close();
      connection.disconnect();
    }
  });
});

describe('in-process scheduler', () => {
  // Fake timers: the scheduler's interval, the runs' work and the close deadline all move only when
  // the test advances the clock, so what overlaps what does not depend on the machine's load.
  it('never overlaps a run with itself and aborts a run still going at close', async () => {
    vi.useFakeTimers();
    try {
      await neverOverlapsThenAborts();
    } finally {
      vi.useRealTimers();
    }
  });

  async function neverOverlapsThenAborts(): Promise<void> {
    let active = 0;
    let maxActive = 0;
    let reason: unknown;
    const { task, runs } = counting(
      'slow',
      20,
      (signal) =>
        new Promise<void>((resolve) => {
          active += 1;
          maxActive = Math.max(maxActive, active);
          const done = (): void => {
            active -= 1;
            resolve();
          };
          const timer = setTimeout(done, 70);
          signal.addEventListener('abort', () => {
            reason = signal.reason;
            clearTimeout(timer);
            done();
          });
        }),
    );
    const scheduler = new InProcessScheduler([task], { logger: silentLogger });
    await scheduler.start();
    // Due every 20 ms, each run takes 70: the run due at 20 ends at 90, so the ticks at 40, 60 and
    // 80 are skipped and the next run starts at 100, then 180.
    await vi.advanceTimersByTimeAsync(20);
    expect(runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(60);
    expect(runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(20);
    expect(runs).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(80);
    expect(runs).toHaveLength(3);
    expect(runs.map((at) => at - (runs[0] ?? 0))).toEqual([0, 80, 160]);
    expect(maxActive).toBe(1);

    // The run that started at 180 is still going when close gives it 10 ms: it is aborted.
    const closing = scheduler.close({ timeoutMs: 10 });
    await vi.advanceTimersByTimeAsync(10);
    await closing;
    expect(reason).toBe('shutdown');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs).toHaveLength(3);
  }

  it('refuses two tasks with one name', () => {
    const { task } = counting('twice', 100);
    expect(() => new InProcessScheduler([task, task])).toThrow(/declared twice/);
  });
});

describe('shutdown', () => {
  it('runs closers in order, past a failing one, under one deadline', async () => {
    const order: string[] = [];
    const closer = (name: string, work: () => Promise<void> = () => Promise.resolve()) => ({
      name,
      async close() {
        order.push(name);
        await work();
      },
    });
    expect(await closeAll([closer('http'), closer('queue')], { logger: silentLogger })).toBe(true);
    expect(
      await closeAll([closer('bad', () => Promise.reject(new Error('x'))), closer('db')], {
        logger: silentLogger,
      }),
    ).toBe(false);
    expect(
      await closeAll([closer('hangs', () => delay(1_000))], { logger: silentLogger, timeoutMs: 50 }),
    ).toBe(false);
    expect(order).toEqual(['http', 'queue', 'bad', 'db', 'hangs']);
  });

  it('closes on SIGTERM and exits with the outcome', async () => {
    const exits: number[] = [];
    const closed: string[] = [];
    const uninstall = installShutdownHandlers(
      [{ name: 'relay', close: () => Promise.resolve(void closed.push('relay')) }],
      { logger: silentLogger, exit: (code) => exits.push(code) },
    );
    try {
      process.emit('SIGTERM');
      await waitFor(() => exits.length === 1);
      expect(closed).toEqual(['relay']);
      expect(exits).toEqual([0]);
    } finally {
      uninstall();
    }
  });
});
