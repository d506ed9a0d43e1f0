// An opt-in, cross-process timeline of what happens to an Environment, step by step: with
// SANDLOT_TIMELINE_FILE set, every process appends one JSON line per step to that file
// (`{"t":…,"pid":…,"role":…,"key":<environmentId>,"step":…}`, `t` in epoch milliseconds with
// microsecond precision, comparable across the processes of one machine). The benchmark reads the
// lines back to say where a lifecycle's time goes (bench/lib/timeline.ts). Off, which is the
// default, a mark costs one comparison. A line names an Environment and a step, never a caller, a
// token or a provider option.
import { appendFileSync } from 'node:fs';

export interface TimelineMark {
  /** Epoch milliseconds, fractional. */
  t: number;
  pid: number;
  role: string;
  /** The Environment the step belongs to. */
  key: string;
  step: string;
}

let file: string | null = null;
let role = 'process';

/** Epoch milliseconds with sub-millisecond precision (monotonic within the process). */
export const timelineNow = (): number => performance.timeOrigin + performance.now();

/** Starts writing marks to `path` (append), labelled with this process's `name`. */
export function enableTimeline(path: string, name: string): void {
  file = path;
  role = name;
}

export function disableTimeline(): void {
  file = null;
}

export const timelineEnabled = (): boolean => file !== null;

/** Records that `step` happened to Environment `key`, now or at `at` (timelineNow's clock). */
export function mark(key: string, step: string, at?: number): void {
  if (file === null) return;
  const line: TimelineMark = { t: at ?? timelineNow(), pid: process.pid, role, key, step };
  try {
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  } catch {
    // A diagnostic must never fail the work it watches: a lost line is a gap in the timeline.
  }
}
