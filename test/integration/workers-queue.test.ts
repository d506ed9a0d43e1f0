// One suite for both effect queues (BullMQ on real Redis db 0, in-process), plus BullMQ specifics.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BullmqEffectQueue, EFFECTS_QUEUE } from '../../workers/bullmq-effect-queue.ts';
import type { EffectProcessor, EffectQueue } from '../../workers/effect-queue.ts';
import { InvalidAttemptIdError, QueueClosedError } from '../../workers/errors.ts';
import { InProcessEffectQueue } from '../../workers/in-process-effect-queue.ts';
import { delay, deleteKeys, redisUrl, silentLogger, uniquePrefix, waitFor } from './workers-support.ts';

const url = redisUrl(0);
const filePrefix = uniquePrefix();
let serial = 0;
const cleanups: (() => Promise<void>)[] = [];

interface Subject {
  queue: EffectQueue;
  /**
   * Resolves once the queue holds nothing to run (nothing waiting, running or due for a retry), so
   * no further run can come and a new publish is not a duplicate. Call it after the runs it should
   * account for have finished: it waits on the queue's state, never on the clock.
   */
  drained: () => Promise<void>;
}

function bullmq(
  options: { concurrency?: number; lockDurationMs?: number } = {},
): Subject & { prefix: string } {
  const prefix = `${filePrefix}-${++serial}`;
  const queue = new BullmqEffectQueue({
    redis: url,
    prefix,
    backoffMs: 20,
    logger: silentLogger,
    ...options,
  });
  const connection = new Redis(url);
  const inspect = new Queue(EFFECTS_QUEUE, { connection, prefix });
  cleanups.push(async () => {
    await queue.close({ timeoutMs: 1_000 });
    await inspect.close();
    connection.disconnect();
  });
  const drained = (): Promise<void> =>
    waitFor(
      async () => {
        const counts = await inspect.getJobCounts(
          'waiting',
          'active',
          'delayed',
          'prioritized',
          'waiting-children',
        );
        return Object.values(counts).every((n) => n === 0);
      },
      { what: 'the queue to drain' },
    );
  return { queue, drained, prefix };
}

function inProcess(options: { concurrency?: number } = {}): Subject {
  const queue = new InProcessEffectQueue({ backoffMs: 20, logger: silentLogger, ...options });
  cleanups.push(() => queue.close({ timeoutMs: 1_000 }));
  // Its bookkeeping after a run returns is synchronous (start the next entry, or set a retry timer
  // for a failed attempt), so one turn of the event loop after the last run returned it has
  // started everything it will; callers wait for the final attempt, after which no retry is due.
  return { queue, drained: () => new Promise<void>((resolve) => setImmediate(resolve)) };
}

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});
afterAll(() => deleteKeys(url, filePrefix));

function recorder(work: (attemptId: string, signal: AbortSignal) => Promise<void> = () => Promise.resolve()) {
  /** Attempt IDs as their runs start, and as they return or throw. */
  const runs: string[] = [];
  const finished: string[] = [];
  let active = 0;
  let maxActive = 0;
  const processor: EffectProcessor = async ({ attemptId }, signal) => {
    runs.push(attemptId);
    active += 1;
    maxActive = Math.max(maxActive, active);
    try {
      await work(attemptId, signal);
    } finally {
      active -= 1;
      finished.push(attemptId);
    }
  };
  return {
    runs,
    finished,
    processor,
    count: (id: string) => runs.filter((r) => r === id).length,
    finishedCount: (id: string) => finished.filter((r) => r === id).length,
    max: () => maxActive,
  };
}

describe.each([
  ['bullmq', bullmq],
  ['in-process', inProcess],
] as const)('effect queue (%s)', (_name, make) => {
  it('runs each published job once, within its concurrency', async () => {
    const { queue, drained } = make({ concurrency: 2 });
    const rec = recorder(() => delay(20));
    queue.start(rec.processor);
    const ids = Array.from({ length: 12 }, (_, i) => `att-${i}`);
    await queue.publish(ids.map((attemptId) => ({ attemptId })));
    await waitFor(() => rec.finished.length === 12, { what: '12 runs to finish' });
    await drained();
    expect([...rec.runs].sort()).toEqual([...ids].sort());
    expect(rec.max()).toBe(2);
  });

  it('runs an attempt published twice while queued only once', async () => {
    const { queue, drained } = make();
    await queue.publish([{ attemptId: 'dup-a' }, { attemptId: 'dup-a' }]);
    await queue.publish([{ attemptId: 'dup-a' }, { attemptId: 'dup-b' }]);
    const rec = recorder();
    queue.start(rec.processor);
    await waitFor(() => rec.finished.length >= 2, { what: 'two runs to finish' });
    await drained();
    expect(rec.count('dup-a')).toBe(1);
    expect(rec.count('dup-b')).toBe(1);
  });

  it('runs an attempt again when it is re-published after completion', async () => {
    const { queue, drained } = make();
    const rec = recorder();
    queue.start(rec.processor);
    await queue.publish([{ attemptId: 'again' }]);
    await waitFor(() => rec.finishedCount('again') === 1, { what: 'the first run to finish' });
    await drained();
    await queue.publish([{ attemptId: 'again' }]);
    await waitFor(() => rec.count('again') === 2, { what: 'the second run' });
  });

  it('retries a throwing processor, three attempts in all', async () => {
    const { queue, drained } = make();
    const rec = recorder((id) =>
      id === 'flaky' && rec.count('flaky') < 3 ? Promise.reject(new Error('transient')) : Promise.resolve(),
    );
    const hopeless = recorder();
    queue.start(async (job, signal) => {
      if (job.attemptId === 'hopeless') {
        await hopeless.processor(job, signal);
        throw new Error('always');
      }
      await rec.processor(job, signal);
    });
    await queue.publish([{ attemptId: 'flaky' }, { attemptId: 'hopeless' }]);
    await waitFor(() => rec.finishedCount('flaky') === 3 && hopeless.finished.length === 3, {
      what: 'three attempts each',
    });
    await drained();
    expect(rec.count('flaky')).toBe(3);
    expect(hopeless.runs).toHaveLength(3);
  });

  it('close waits for a running job that finishes within the timeout', async () => {
    const { queue } = make();
    let aborted = false;
    let finished = false;
    const rec = recorder(async (_id, signal) => {
      await delay(150);
      aborted = signal.aborted;
      finished = true;
    });
    queue.start(rec.processor);
    await queue.publish([{ attemptId: 'patient' }]);
    await waitFor(() => rec.runs.length === 1);
    await queue.close({ timeoutMs: 5_000 });
    expect(finished).toBe(true);
    expect(aborted).toBe(false);
  });

  it('close aborts the signal of a job still running at the timeout, then stops taking work', async () => {
    const { queue } = make({ concurrency: 1 });
    let reason: unknown;
    const rec = recorder(
      (_id, signal) =>
        new Promise<void>((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            reason = signal.reason;
            reject(new Error('aborted'));
          });
        }),
    );
    queue.start(rec.processor);
    await queue.publish([{ attemptId: 'stuck' }, { attemptId: 'never' }]);
    await waitFor(() => rec.runs.length === 1);
    const started = Date.now();
    await queue.close({ timeoutMs: 200 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(reason).toBe('shutdown');
    expect(rec.runs).toEqual(['stuck']);
    await expect(queue.publish([{ attemptId: 'late' }])).rejects.toBeInstanceOf(QueueClosedError);
  });

  it('refuses attempt IDs BullMQ would mangle', async () => {
    const { queue } = make();
    for (const attemptId of ['12345', 'a:b', '']) {
      await expect(queue.publish([{ attemptId }])).rejects.toBeInstanceOf(InvalidAttemptIdError);
    }
  });
});

describe('bullmq effect queue', () => {
  it('hands a job interrupted by shutdown back without spending an attempt', async () => {
    const { queue, prefix } = bullmq();
    queue.start(
      (_job, signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', reject)),
    );
    await queue.publish([{ attemptId: 'handed-back' }]);
    const inspect = new Redis(url);
    try {
      await waitFor(async () => (await inspect.llen(`${prefix}:${EFFECTS_QUEUE}:active`)) === 1, {
        what: 'active',
      });
      await queue.close({ timeoutMs: 100 });
      const job = await inspect.hgetall(`${prefix}:${EFFECTS_QUEUE}:handed-back`);
      expect(job['failedReason'] ?? '').toBe('');
      expect(Number(job['atm'] ?? 0)).toBe(0);
      expect(await inspect.zscore(`${prefix}:${EFFECTS_QUEUE}:delayed`, 'handed-back')).not.toBeNull();
    } finally {
      inspect.disconnect();
    }
  });

  it('aborts a job whose lock was lost, since another worker may now run it', async () => {
    const { queue, prefix } = bullmq({ lockDurationMs: 400 });
    let reason: unknown;
    queue.start(
      (_job, signal) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            reason = signal.reason;
            resolve();
          });
        }),
    );
    await queue.publish([{ attemptId: 'lock-lost' }]);
    const redis = new Redis(url);
    try {
      await waitFor(async () => (await redis.exists(`${prefix}:${EFFECTS_QUEUE}:lock-lost:lock`)) === 1);
      await redis.del(`${prefix}:${EFFECTS_QUEUE}:lock-lost:lock`);
      await waitFor(() => reason !== undefined, { timeoutMs: 3_000, what: 'the abort' });
      expect(reason).toBe('lock-lost');
    } finally {
      redis.disconnect();
    }
  });
});
