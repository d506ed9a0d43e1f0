// One measured window around a benchmark point: write transactions (the transaction-ID delta),
// CPU time of each watched process group (API, worker, PostgreSQL, Redis, or this process), peak
// RSS, and whether another database committed meanwhile (then cluster-wide figures are inflated).
import { ProcessGroup, memoryKiB } from './proc.ts';
import type { PgProbe } from './postgres.ts';

export interface WindowGroups {
  /** Fixed PIDs per group name, e.g. { api: [..], worker: [..], redis: [..] }. */
  fixed: Record<string, number[]>;
  /** PostgreSQL processes are looked up while the window runs (backends come and go). */
  postgres: boolean;
}

export interface WindowResult {
  writeTransactions: number;
  otherDatabaseCommits: number;
  cpuMs: Record<string, number>;
  peakRssKiB: Record<string, number>;
  /** VmHWM at the end of the window (the process's peak since it started), per group. */
  hwmKiB: Record<string, number>;
}

export interface Window {
  stop(): Promise<WindowResult>;
}

const SAMPLE_EVERY_MS = 250;

export async function openWindow(probe: PgProbe, groups: WindowGroups): Promise<Window> {
  const watched = new Map<string, ProcessGroup>();
  for (const [name, pids] of Object.entries(groups.fixed)) {
    const group = new ProcessGroup();
    group.start(pids);
    watched.set(name, group);
  }
  const postgres = new ProcessGroup();
  if (groups.postgres) postgres.start(await probe.pids());
  const before = await probe.mark();
  let sampling: Promise<void> = Promise.resolve();
  const sample = async () => {
    for (const [name, group] of watched) group.sample(groups.fixed[name] ?? []);
    if (groups.postgres) postgres.sample(await probe.pids());
  };
  const timer = setInterval(() => {
    sampling = sampling.then(sample).catch(() => undefined);
  }, SAMPLE_EVERY_MS);
  return {
    async stop() {
      clearInterval(timer);
      await sampling;
      await sample();
      const after = await probe.mark();
      const cpu: Record<string, number> = {};
      const peak: Record<string, number> = {};
      const hwm: Record<string, number> = {};
      for (const [name, group] of watched) {
        cpu[name] = group.cpuMs();
        peak[name] = group.peakRssKiB();
        hwm[name] = Math.max(0, ...(groups.fixed[name] ?? []).map((pid) => memoryKiB(pid)?.hwm ?? 0));
      }
      if (groups.postgres) cpu['postgres'] = postgres.cpuMs();
      return {
        writeTransactions: Number(after.nextXid - before.nextXid),
        otherDatabaseCommits: after.otherCommits - before.otherCommits,
        cpuMs: cpu,
        peakRssKiB: peak,
        hwmKiB: hwm,
      };
    },
  };
}
