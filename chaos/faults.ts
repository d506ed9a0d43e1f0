// Runs the fault schedule against the stack: each fault at its offset from the start of the load.
// Before each one it records what is in flight (SQL), and after it starts a recovery tracker
// (chaos/recovery.ts). A killed process is started again after the pause the schedule gave it; a
// stalled worker is continued after its stall. Restarts and resumes run beside the schedule, so one
// fault never delays the next.
import type { Recorder } from './recorder.ts';
import { inFlight, waitRecovered, type InFlight, type Recovery } from './recovery.ts';
import { describeFault, type ScheduledFault } from './schedule.ts';
import type { ChaosStack } from './stack.ts';

export interface FaultOutcome {
  fault: ScheduledFault;
  /** Milliseconds since the run started, when the fault hit. */
  atMs: number;
  description: string;
  /** How long the fault itself took (a PostgreSQL restart, a process start-up after a kill). */
  durationMs: number | null;
  error: string | null;
  recovery: Recovery | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const RECOVERY_CAP_MS = 180_000;

export async function runSchedule(
  stack: ChaosStack,
  schedule: readonly ScheduledFault[],
  recorder: Recorder,
  loadStartedAt: number,
): Promise<FaultOutcome[]> {
  const background: Promise<void>[] = [];
  const outcomes: FaultOutcome[] = [];
  const processes = new Map([...stack.apis, ...stack.workers].map((p) => [p.name, p]));
  for (const fault of schedule) {
    await sleep(loadStartedAt + fault.atMs - Date.now());
    const snapshot: InFlight | null = await inFlight(stack.db).catch(() => null);
    const at = Date.now();
    const outcome: FaultOutcome = {
      fault,
      atMs: recorder.elapsed(at),
      description: describeFault(fault),
      durationMs: null,
      error: null,
      recovery: null,
    };
    outcomes.push(outcome);
    recorder.line(`fault at +${(outcome.atMs / 1000).toFixed(1)}s: ${outcome.description}`);
    try {
      switch (fault.kind) {
        case 'kill': {
          const target = processes.get(fault.target);
          if (target === undefined) throw new Error(`no process ${fault.target}`);
          // One still starting (slow start-ups on a loaded machine) is killed once it runs.
          await target.whenReady();
          stack.disruptions.processDown(target.name, Date.now(), 'killed');
          await target.kill();
          recorder.count(`faults: SIGKILL ${target.role}`);
          background.push(
            (async () => {
              await sleep(fault.restartAfterMs);
              const starting = Date.now();
              await startAgain(target, recorder);
              stack.disruptions.processUp(target.name, Date.now());
              outcome.durationMs = Date.now() - starting;
            })(),
          );
          break;
        }
        case 'stall': {
          const target = processes.get(fault.target);
          if (target === undefined) throw new Error(`no process ${fault.target}`);
          // A worker still starting after an earlier kill is stalled once it runs.
          await target.whenReady();
          target.pause();
          recorder.count('faults: worker stalled (SIGSTOP, SIGCONT)');
          background.push(
            (async () => {
              await sleep(fault.stallMs);
              target.resume();
              outcome.durationMs = fault.stallMs;
            })(),
          );
          break;
        }
        case 'redis-flush':
          await stack.redis.flushAll();
          recorder.count('faults: Redis FLUSHALL');
          break;
        case 'pg-restart': {
          // Open before the restart begins: the first 503s come while pg_ctl is still waiting.
          const window = stack.disruptions.pgRestart(at);
          await stack.pg.restart();
          const end = Date.now();
          window.close(end);
          outcome.durationMs = end - at;
          recorder.count('faults: PostgreSQL restart');
          break;
        }
      }
    } catch (error) {
      outcome.error = error instanceof Error ? error.message : String(error);
      recorder.line(`fault ${outcome.description} failed: ${outcome.error}`);
    }
    if (snapshot !== null) {
      background.push(
        waitRecovered(stack.db, snapshot, at, RECOVERY_CAP_MS).then((recovery) => {
          outcome.recovery = recovery;
          if (recovery.recoveredMs === null) {
            recorder.find(
              'not-recovered',
              `${outcome.description} at +${(outcome.atMs / 1000).toFixed(1)}s: not moved within ${RECOVERY_CAP_MS / 1000} s: ${recovery.stuck.join('; ')}`,
            );
          }
        }),
      );
    }
  }
  await Promise.all(background);
  return outcomes;
}

/** Starts a killed process again; a failed start-up is retried once a second for a minute. */
async function startAgain(
  target: { name: string; start(): Promise<void>; running: boolean },
  recorder: Recorder,
): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      await target.start();
      return;
    } catch (error) {
      recorder.line(`${target.name} did not start again (try ${tries}): ${String(error).slice(0, 300)}`);
      if (tries >= 60) throw error;
      await sleep(1_000);
    }
  }
}
