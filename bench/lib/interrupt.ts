// Clean-up when the bench is interrupted (Ctrl-C, SIGTERM, SIGHUP): child processes stopped, the
// throw-away databases dropped, the private PostgreSQL stopped, the build directory removed, as
// the normal path's `finally` blocks would have. Each resource registers its clean-up while it
// lives; on a signal they run newest first, each given at most 15 s, then the process exits.
import { status } from './progress.ts';

const tasks: Array<{ name: string; run: () => Promise<void> }> = [];
let installed = false;
let interrupted = false;
let main: Promise<unknown> = Promise.resolve();

/**
 * The bench's main flow: after the clean-ups, the exit also waits (at most 20 s) for it to settle,
 * since its own `finally` blocks may have started some of them first and still be at it.
 */
export function interruptible(flow: Promise<unknown>): void {
  main = flow;
}

function install(): void {
  if (installed) return;
  installed = true;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (interrupted) return;
      interrupted = true;
      status(`${signal}: cleaning up (${tasks.length} step(s))`);
      // The measurement still running loses its processes and database under it: its errors,
      // however they surface, must not end the process before the clean-up does.
      process.on('uncaughtException', () => undefined);
      process.on('unhandledRejection', () => undefined);
      void (async () => {
        // Newest first, and any registered meanwhile too (the main flow is still running).
        for (let task = tasks.pop(); task !== undefined; task = tasks.pop()) {
          status(`cleaning up: ${task.name}`);
          const timeout = new Promise<void>((resolve) => setTimeout(resolve, 15_000).unref());
          await Promise.race([task.run().catch(() => undefined), timeout]);
        }
        const timeout = new Promise<void>((resolve) => setTimeout(resolve, 20_000).unref());
        await Promise.race([main.catch(() => undefined), timeout]);
        process.exit(130);
      })();
    });
  }
}

/** True once a signal started the clean-up (the bench then exits with 130 when it is done). */
export const isInterrupted = (): boolean => interrupted;

/** Registers a clean-up for an interruption; call the answer once the resource is gone. */
export function onInterrupt(name: string, run: () => Promise<void>): () => void {
  install();
  const task = { name, run };
  tasks.push(task);
  return () => {
    const index = tasks.indexOf(task);
    if (index !== -1) tasks.splice(index, 1);
  };
}
