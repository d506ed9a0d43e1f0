// The one way a long-running `sandlot` process stops (serve and worker alike). On SIGTERM or SIGINT
// the closers run in the order given (stop taking work first: the HTTP server, then workers and
// queues, the database last) under one grace period, which stays below Kubernetes' default 30 s
// termination grace period so we exit on our own terms rather than being SIGKILLed mid-write. One
// line is logged when it is over; the exit code is 0 only if every closer finished cleanly in time.
import type { Logger } from 'pino';

/** How long all closers together may take before the process exits anyway (with code 1). */
export const SHUTDOWN_GRACE_MS = 25_000;

export interface Closer {
  name: string;
  close(): Promise<void>;
}

export interface ShutdownOptions {
  logger: Logger;
  /** Overall deadline for all closers (default SHUTDOWN_GRACE_MS). */
  timeoutMs?: number;
  signals?: readonly NodeJS.Signals[];
  /** Defaults to `process.exit`; tests inject their own. */
  exit?: (code: number) => void;
}

interface CloseReport {
  /** Every closer finished, none failed, all within the grace period. */
  clean: boolean;
  timedOut: boolean;
  /** Milliseconds each closer that finished took, in order. */
  closed: Record<string, number>;
  /** The closer still running when the grace period ran out. */
  stuck?: string;
}

async function runClosers(
  closers: readonly Closer[],
  logger: Logger,
  timeoutMs: number,
): Promise<CloseReport> {
  const closed: Record<string, number> = {};
  let failed = false;
  let current: string | undefined;
  const sequence = (async () => {
    for (const closer of closers) {
      current = closer.name;
      const started = Date.now();
      try {
        await closer.close();
      } catch (error) {
        failed = true;
        logger.error({ err: error, closer: closer.name }, 'close failed; continuing');
      }
      closed[closer.name] = Date.now() - started;
    }
    current = undefined;
  })();
  // Not unref'd: if a closer hangs on something that holds no handle, the process must still wait
  // out the grace period and exit non-zero, not drift off with code 0 when the event loop empties.
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([sequence.then(() => 'done' as const), expired]);
    if (outcome === 'expired') {
      return {
        clean: false,
        timedOut: true,
        closed: { ...closed },
        ...(current === undefined ? {} : { stuck: current }),
      };
    }
  } finally {
    clearTimeout(timer);
  }
  return { clean: !failed, timedOut: false, closed };
}

/** Runs the closers in order; resolves false if one failed or the deadline passed. */
export async function closeAll(
  closers: readonly Closer[],
  options: { logger: Logger; timeoutMs?: number },
): Promise<boolean> {
  const timeoutMs = options.timeoutMs ?? SHUTDOWN_GRACE_MS;
  const report = await runClosers(closers, options.logger, timeoutMs);
  if (report.timedOut)
    options.logger.error({ closer: report.stuck, timeoutMs }, 'shutdown grace period passed');
  return report.clean;
}

/** Installs the handlers; returns a function that removes them. A second signal exits at once. */
export function installShutdownHandlers(closers: readonly Closer[], options: ShutdownOptions): () => void {
  const { logger } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const timeoutMs = options.timeoutMs ?? SHUTDOWN_GRACE_MS;
  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shuttingDown) {
      logger.warn({ signal }, 'second signal during shutdown; exiting now');
      exit(1);
      return;
    }
    shuttingDown = true;
    const started = Date.now();
    void runClosers(closers, logger, timeoutMs).then((report) => {
      const line = { signal, ms: Date.now() - started, closed: report.closed };
      if (report.timedOut) {
        logger.error({ ...line, stuck: report.stuck, timeoutMs }, 'shutdown grace period passed; exiting');
      } else if (report.clean) {
        logger.info(line, 'shut down');
      } else {
        logger.warn(line, 'shut down after a failed close');
      }
      exit(report.clean ? 0 : 1);
    });
  };
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
