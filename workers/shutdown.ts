// Graceful stop on SIGTERM/SIGINT. Closers run in the order given (stop taking work first: HTTP,
// relay, queues; the database last) under one overall deadline, which must stay below the pod's
// termination grace period so we exit on our own terms rather than being SIGKILLed mid-write.
import type { Logger } from 'pino';
import { settleWithin } from './deadline.ts';

export interface Closer {
  name: string;
  close(): Promise<void>;
}

export interface ShutdownOptions {
  logger: Logger;
  /** Overall deadline for all closers (default 25 s, under Kubernetes' 30 s grace period). */
  timeoutMs?: number;
  signals?: readonly NodeJS.Signals[];
  /** Defaults to `process.exit`; tests inject their own. */
  exit?: (code: number) => void;
}

/** Runs the closers in order; resolves false if one failed or the deadline passed. */
export async function closeAll(
  closers: readonly Closer[],
  options: { logger: Logger; timeoutMs?: number },
): Promise<boolean> {
  const { logger } = options;
  const timeoutMs = options.timeoutMs ?? 25_000;
  let clean = true;
  let current: string | undefined;
  const sequence = (async () => {
    for (const closer of closers) {
      current = closer.name;
      const started = Date.now();
      try {
        await closer.close();
        logger.info({ closer: closer.name, ms: Date.now() - started }, 'closed');
      } catch (error) {
        clean = false;
        logger.error({ err: error, closer: closer.name }, 'close failed; continuing');
      }
    }
    current = undefined;
  })();
  if (!(await settleWithin(sequence, timeoutMs))) {
    logger.error({ closer: current, timeoutMs }, 'shutdown deadline passed');
    return false;
  }
  return clean;
}

/** Installs the handlers; returns a function that removes them. A second signal exits at once. */
export function installShutdownHandlers(closers: readonly Closer[], options: ShutdownOptions): () => void {
  const { logger } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shuttingDown) {
      logger.warn({ signal }, 'second signal during shutdown; exiting now');
      exit(1);
      return;
    }
    shuttingDown = true;
    logger.info({ signal, closers: closers.map((c) => c.name) }, 'shutting down');
    void closeAll(closers, {
      logger,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    }).then((clean) => {
      logger.info({ clean }, 'shutdown complete');
      exit(clean ? 0 : 1);
    });
  };
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
