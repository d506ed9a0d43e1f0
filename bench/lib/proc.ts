// What the kernel says about a process: CPU time (utime + stime, /proc/<pid>/stat) and memory
// (VmRSS, VmHWM, /proc/<pid>/status), plus a sampler that remembers each process's latest CPU
// time and largest RSS, so that short-lived processes (PostgreSQL backends) still count.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU milliseconds (user + system) the process has used so far; undefined once it is gone. */
export function cpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name may hold spaces: fields count from after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / clockTicks();
}

/** Resident and peak resident memory in KiB; undefined once the process is gone. */
export function memoryKiB(pid: number): { rss: number; hwm: number } | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/**
 * Watches a changing set of processes: `sample(pids)` records each one's CPU time (the first sight
 * is the baseline) and largest RSS. `cpuMsSince()` sums, over every process ever seen, the CPU it
 * used after it was first seen; a process that appears later counts from 0 (it started inside the
 * window) unless it was in the baseline set passed to `start`.
 */
export class ProcessGroup {
  readonly #first = new Map<number, number>();
  readonly #last = new Map<number, number>();
  #peakRssKiB = 0;

  start(pids: readonly number[]): void {
    for (const pid of pids) {
      const ms = cpuMs(pid);
      if (ms !== undefined) {
        this.#first.set(pid, ms);
        this.#last.set(pid, ms);
      }
    }
  }

  sample(pids: readonly number[]): void {
    for (const pid of pids) {
      const ms = cpuMs(pid);
      if (ms === undefined) continue;
      if (!this.#first.has(pid)) this.#first.set(pid, 0);
      this.#last.set(pid, ms);
      const rss = memoryKiB(pid)?.rss ?? 0;
      if (rss > this.#peakRssKiB) this.#peakRssKiB = rss;
    }
  }

  cpuMs(): number {
    let total = 0;
    for (const [pid, last] of this.#last) total += last - (this.#first.get(pid) ?? last);
    return total;
  }

  peakRssKiB(): number {
    return this.#peakRssKiB;
  }
}
