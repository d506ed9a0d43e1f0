// The opt-in step timeline: off, a mark writes nothing; on, each mark is one JSON line naming the
// Environment and the step on a clock shared by the processes of one machine.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { disableTimeline, enableTimeline, mark, timelineEnabled, timelineNow } from '../../lib/timeline.ts';

describe('step timeline', () => {
  afterEach(() => disableTimeline());

  it('writes nothing while off', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'timeline-'));
    try {
      expect(timelineEnabled()).toBe(false);
      mark('env_a', 'nothing');
      expect(existsSync(join(dir, 'timeline.jsonl'))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('appends one line per mark, with the time given or now', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'timeline-'));
    const file = join(dir, 'timeline.jsonl');
    try {
      enableTimeline(file, 'worker');
      const before = timelineNow();
      mark('env_a', 'first', 1234.5);
      mark('env_a', 'second');
      const lines = (await readFile(file, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as object);
      const [first, second] = lines as Array<{ t: number }>;
      expect(first).toEqual({ t: 1234.5, pid: process.pid, role: 'worker', key: 'env_a', step: 'first' });
      expect(second).toMatchObject({ pid: process.pid, role: 'worker', key: 'env_a', step: 'second' });
      if (second === undefined) throw new Error('no second line');
      expect(second.t).toBeGreaterThanOrEqual(before);
      // Epoch milliseconds: comparable with Date.now() in another process.
      expect(Math.abs(second.t - Date.now())).toBeLessThan(60_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a file it cannot write costs a gap, never an error', () => {
    enableTimeline(join(tmpdir(), 'no-such-dir', 'deeper', 'timeline.jsonl'), 'api');
    expect(() => mark('env_a', 'lost')).not.toThrow();
  });
});
