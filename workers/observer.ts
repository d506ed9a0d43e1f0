// The observer: a periodic task that describes Active leases exactly, through the one attempt
// runner, so phases stay current and a sandbox whose run finished (Finished=True,
// PodSucceeded/PodFailed) retires its placement without anyone asking. It never releases the
// Environment; retirement only ends the lease. Leases are taken least recently observed first.
import type { Logger } from 'pino';
import type { SandlotMetrics } from '../lib/metrics.ts';
import type { AttemptDeps } from '../actors/attempts.ts';
import type { AttemptRunner } from '../actors/ports.ts';
import { observeLease } from '../actors/sandbox-observe.ts';
import { activeLeases } from '../store/leases.ts';
import type { PeriodicTask } from './scheduler.ts';

export interface ObserverDeps extends AttemptDeps {
  runner: AttemptRunner;
  logger: Logger;
  describeTimeoutMs: number;
  batchSize?: number;
  /** Counts the sandboxes it retires (default: not counted). */
  metrics?: SandlotMetrics;
}

export async function observeOnce(deps: ObserverDeps, signal?: AbortSignal): Promise<number> {
  let retired = 0;
  for (const lease of await activeLeases(deps.db, deps.batchSize ?? 100)) {
    if (signal?.aborted === true) break;
    try {
      const observation = await observeLease(deps, lease, { actor: deps.actor, source: 'observer' });
      if (observation?.finished != null) retired++;
    } catch (error) {
      // A quarantined Environment, a lost race: the others still get observed.
      const { environmentId, operationId, resourceGeneration, providerFence } = lease;
      deps.logger.warn(
        { err: error, environmentId, operationId, resourceGeneration, providerFence },
        'could not observe lease',
      );
    }
  }
  if (retired > 0) deps.logger.info({ retired }, 'observer retired finished sandboxes');
  deps.metrics?.observerRetired.inc(retired);
  return retired;
}

export function observerTask(deps: ObserverDeps, everyMs: number): PeriodicTask {
  return {
    name: 'observe',
    everyMs,
    run: async (signal) => {
      await observeOnce(deps, signal);
    },
  };
}
