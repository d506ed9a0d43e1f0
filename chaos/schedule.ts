// The fault schedule: which fault, at what offset from the start of the load, against which process.
// Derived from the seed alone (a pure function), printed before the run, so `--seed S` repeats it.
// Process kills come every `killEveryMs` (±50 %); the Redis flushes, PostgreSQL restarts and worker
// stalls are spread over 10-85 % of the window in a seeded order. A process is never picked while
// it is down or stalled, one API always stays up, and so does one worker.
import { deriveSeed, Rng } from './random.ts';

export type ScheduledFault =
  | { kind: 'kill'; atMs: number; target: string; restartAfterMs: number }
  | { kind: 'stall'; atMs: number; target: string; stallMs: number }
  | { kind: 'redis-flush'; atMs: number }
  | { kind: 'pg-restart'; atMs: number };

export interface ScheduleOptions {
  seed: number;
  windowMs: number;
  apis: number;
  workers: number;
  killEveryMs: number;
  redisFlushes: number;
  pgRestarts: number;
  stalls: number;
}

/** How long a killed process takes to be back (start-up included), for keeping targets apart. */
const RESTART_ALLOWANCE_MS = 10_000;

export const apiName = (i: number): string => `api-${i + 1}`;
export const workerName = (i: number): string => `worker-${i + 1}`;

export function buildSchedule(options: ScheduleOptions): ScheduledFault[] {
  const rng = new Rng(deriveSeed(options.seed, 'schedule'));
  const { windowMs } = options;
  const apis = Array.from({ length: options.apis }, (_, i) => apiName(i));
  const workers = Array.from({ length: options.workers }, (_, i) => workerName(i));
  const busy = new Map<string, [number, number][]>();
  const isFree = (name: string, from: number, to: number) =>
    (busy.get(name) ?? []).every(([a, b]) => b < from || a > to);
  const occupy = (name: string, from: number, to: number) =>
    busy.set(name, [...(busy.get(name) ?? []), [from, to]]);
  /** Free during [from, to], and not the last free one of its kind. */
  const eligible = (group: string[], from: number, to: number) => {
    const free = group.filter((name) => isFree(name, from, to));
    return free.length >= 2 ? free : [];
  };

  const faults: ScheduledFault[] = [];
  // The fixed faults first, so that kills never crowd out a stall's worker.
  const kinds: ('redis-flush' | 'pg-restart' | 'stall')[] = [
    ...Array.from({ length: options.redisFlushes }, () => 'redis-flush' as const),
    ...Array.from({ length: options.pgRestarts }, () => 'pg-restart' as const),
    ...Array.from({ length: options.stalls }, () => 'stall' as const),
  ];
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [kinds[i], kinds[j]] = [kinds[j] as (typeof kinds)[number], kinds[i] as (typeof kinds)[number]];
  }
  kinds.forEach((kind, i) => {
    const fraction = kinds.length === 1 ? 0.45 : 0.1 + (0.75 * i) / (kinds.length - 1);
    const atMs = Math.max(0, Math.round((fraction + rng.between(-0.03, 0.03)) * windowMs));
    if (kind !== 'stall') {
      faults.push({ kind, atMs });
      return;
    }
    const stallMs = rng.int(5_000, 9_000);
    const free = eligible(workers, atMs, atMs + stallMs + 1_000);
    if (free.length === 0) return;
    const target = rng.pick(free);
    occupy(target, atMs, atMs + stallMs + 1_000);
    faults.push({ kind, atMs, target, stallMs });
  });

  for (let at = options.killEveryMs * rng.between(0.5, 1.5); at < windowMs;) {
    const atMs = Math.round(at);
    const restartAfterMs = rng.int(500, 3_000);
    const end = atMs + restartAfterMs + RESTART_ALLOWANCE_MS;
    const useApi = rng.chance(apis.length / (apis.length + workers.length));
    const candidates = eligible(useApi ? apis : workers, atMs, end);
    const target = candidates.length === 0 ? undefined : rng.pick(candidates);
    if (target !== undefined) {
      occupy(target, atMs, end);
      faults.push({ kind: 'kill', atMs, target, restartAfterMs });
    }
    at += options.killEveryMs * rng.between(0.5, 1.5);
  }
  return faults.sort((a, b) => a.atMs - b.atMs);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

export function describeFault(fault: ScheduledFault): string {
  switch (fault.kind) {
    case 'kill':
      return `SIGKILL ${fault.target}, restart after ${seconds(fault.restartAfterMs)}`;
    case 'stall':
      return `SIGSTOP ${fault.target} for ${seconds(fault.stallMs)}, then SIGCONT`;
    case 'redis-flush':
      return 'FLUSHALL Redis';
    case 'pg-restart':
      return 'restart PostgreSQL (pg_ctl restart -m fast)';
  }
}

export function formatSchedule(faults: readonly ScheduledFault[]): string[] {
  return faults.map((fault) => `  +${seconds(fault.atMs).padStart(7)}  ${describeFault(fault)}`);
}
