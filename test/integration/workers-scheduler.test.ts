// Periodic tasks: BullMQ job schedulers on real Redis (db 0, own prefix) and the in-process timers.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { BullmqScheduler, MAINTENANCE_QUEUE } from '../../workers/bullmq-scheduler.ts';
import { InProcessScheduler, type PeriodicTask } from '../../workers/scheduler.ts';
import { closeAll, installShutdownHandlers } from '../../workers/shutdown.ts';
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

describe('bullmq scheduler', () => {
  it('runs a task about every 200 ms and stops after close', async () => {
    const { task, runs } = counting('reconcile', 200);
    const scheduler = new BullmqScheduler({
      redis: url,
      prefix: `${prefix}-a`,
      tasks: [task],
      logger: silentLogger,
    });
    await scheduler.start();
    await waitFor(() => runs.length >= 5, { timeoutMs: 5_000, what: 'five runs' });
    await scheduler.close({ timeoutMs: 1_000 });
    // Runs are due on a fixed grid, so one late run makes the next gap short: check the average,
    // leaving out the first run, which also waits for the worker to connect.
    const [second = 0, ...rest] = runs.slice(1);
    const average = ((rest.at(-1) ?? second) - second) / rest.length;
    expect(average).toBeGreaterThan(150);
    expect(average).toBeLessThan(350);
    const seen = runs.length;
    await delay(600);
    expect(runs.length).toBe(seen);
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
      await delay(1_100);
      // One schedule: about five runs in 1.1 s across both workers, not ten.
      expect(runs.length).toBeGreaterThanOrEqual(3);
      expect(runs.length).toBeLessThanOrEqual(7);
    } finally {
      await Promise.all(schedulers.map((s) => s.close({ timeoutMs: 1_000 })));
      await queue.close();
      connection.disconnect();
    }
  });
});

describe('in-process scheduler', () => {
  it('never overlaps a run with itself and aborts a run still going at close', async () => {
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
    await waitFor(() => runs.length >= 3);
    expect(maxActive).toBe(1);
    await scheduler.close({ timeoutMs: 10 });
    const seen = runs.length;
    expect(reason).toBe('shutdown');
    await delay(100);
    expect(runs.length).toBe(seen);
  });

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
