// Where one lifecycle's time goes: a stack of its own (1 API + 1 worker) with the step timeline on
// (SANDLOT_TIMELINE_FILE, lib/timeline.ts), lifecycles one at a time over HTTP with long-polling
// reads, the client's own steps merged with the processes' marks on one clock. The lifecycle with
// the median provision→Active is printed step by step, each step with its offset from the
// request's answer and the time since the step before it, for the two hand-offs: provision's
// answer → the lease seen Active, and release's answer → Released seen.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { timelineNow, type TimelineMark } from '../../lib/timeline.ts';
import { driveHttp } from './http-driver.ts';
import type { BenchDatabase } from './postgres.ts';
import { status } from './progress.ts';
import { startStack, type Entry } from './stack.ts';
import { percentile, round } from './stats.ts';

export interface TimelineStep {
  /** The process that marked it (`client`, `api`, `worker`). */
  role: string;
  step: string;
  /** Milliseconds since the segment began (the request's answer). */
  atMs: number;
  /** Milliseconds since the step before it. */
  sinceMs: number;
}

export interface TimelineSegment {
  name: string;
  /** p50 and p99 of the segment over all measured lifecycles. */
  p50Ms: number;
  p99Ms: number;
  /** The median lifecycle's steps. */
  steps: TimelineStep[];
}

export interface TimelineResult {
  lifecycles: number;
  segments: TimelineSegment[];
}

const SEGMENTS = [
  {
    name: 'provision answered → lease seen Active',
    from: 'provision answered 202',
    to: 'saw the lease Active',
  },
  { name: 'release answered → Released seen', from: 'release answered', to: 'saw Released' },
] as const;

export async function measureTimeline(o: {
  database: BenchDatabase;
  entry: Entry;
  redisUrl: string;
  logLevel: string;
  pollQuery: string;
  pollMs: number;
  n: number;
  warmup: number;
}): Promise<TimelineResult> {
  const dir = await mkdtemp(join(tmpdir(), 'sandlot-bench-timeline-'));
  const file = join(dir, 'timeline.jsonl');
  status('step timeline: 1 API + 1 worker, one lifecycle at a time');
  const stack = await startStack({
    database: o.database,
    entry: o.entry,
    redisUrl: o.redisUrl,
    logLevel: o.logLevel,
    apis: 1,
    workers: 1,
    extraEnv: { SANDLOT_TIMELINE_FILE: file },
  });
  try {
    const token = await stack.token();
    const drive = (n: number, tag: string, onStep?: (key: string, step: string) => void) =>
      driveHttp({
        apiUrls: stack.apiUrls,
        token,
        n,
        clients: 1,
        pollMs: o.pollMs,
        pollQuery: o.pollQuery,
        tag,
        label: `timeline ${tag}`,
        ...(onStep === undefined ? {} : { onStep }),
      });
    await drive(o.warmup, 'tl-warm');
    await writeFile(file, '');
    const client: TimelineMark[] = [];
    const run = await drive(o.n, 'tl', (key, step) =>
      client.push({ t: timelineNow(), pid: process.pid, role: 'client', key, step }),
    );
    if (run.completed === 0) throw new Error(`no lifecycle finished: ${run.errors.join('; ')}`);
    const marks = [...client, ...(await readMarks(file))];
    return { lifecycles: run.completed, segments: SEGMENTS.map((s) => segment(marks, s)) };
  } finally {
    await stack.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function readMarks(file: string): Promise<TimelineMark[]> {
  const text = await readFile(file, 'utf8');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as TimelineMark);
}

function segment(
  marks: readonly TimelineMark[],
  s: { name: string; from: string; to: string },
): TimelineSegment {
  const byKey = new Map<string, TimelineMark[]>();
  for (const m of marks) {
    let list = byKey.get(m.key);
    if (list === undefined) byKey.set(m.key, (list = []));
    list.push(m);
  }
  const spans: Array<{ ms: number; steps: TimelineMark[] }> = [];
  for (const list of byKey.values()) {
    const start = list.find((m) => m.role === 'client' && m.step === `client: ${s.from}`);
    const end = list.find((m) => m.role === 'client' && m.step === `client: ${s.to}`);
    if (start === undefined || end === undefined) continue;
    const steps = list.filter((m) => m.t >= start.t && m.t <= end.t).sort((a, b) => a.t - b.t);
    spans.push({ ms: end.t - start.t, steps });
  }
  if (spans.length === 0) return { name: s.name, p50Ms: Number.NaN, p99Ms: Number.NaN, steps: [] };
  const durations = spans.map((x) => x.ms).sort((a, b) => a - b);
  spans.sort((a, b) => a.ms - b.ms);
  const median = spans[Math.floor((spans.length - 1) / 2)] as { steps: TimelineMark[] };
  const origin = median.steps[0]?.t ?? 0;
  let previous = origin;
  const steps = median.steps.map((m) => {
    const step: TimelineStep = {
      role: m.role,
      step: m.step.replace(/^client: /, ''),
      atMs: round(m.t - origin, 2),
      sinceMs: round(m.t - previous, 2),
    };
    previous = m.t;
    return step;
  });
  return {
    name: s.name,
    p50Ms: round(percentile(durations, 50), 2),
    p99Ms: round(percentile(durations, 99), 2),
    steps,
  };
}
