// The observer: a periodic task that describes Active leases exactly, so phases stay current and a
// sandbox whose run finished (Finished=True, PodSucceeded/PodFailed) retires its placement without
// anyone asking. It never releases the Environment; retirement only ends the lease.
import type { Logger } from 'pino';
import type { AttemptDeps } from '../actors/attempts.ts';
import { observeLease } from '../actors/sandbox-inspect.ts';
import type { SandboxProvider } from '../providers/provider.ts';
import { readEnvironment } from '../store/environments.ts';
import { activeLeases } from '../store/leases.ts';
import type { PeriodicTask } from './scheduler.ts';

export interface ObserverDeps extends AttemptDeps {
  provider: SandboxProvider;
  logger: Logger;
  describeTimeoutMs: number;
  batchSize?: number;
}

export async function observeOnce(deps: ObserverDeps, signal?: AbortSignal): Promise<number> {
  let retired = 0;
  for (const lease of await activeLeases(deps.db, deps.batchSize ?? 100)) {
    if (signal?.aborted === true) break;
    try {
      const env = await readEnvironment(deps.db, lease.environmentId);
      if (env === null || env.quarantinedAt !== null) continue;
      const observation = await observeLease(deps, env, lease, deps.actor);
      if (observation?.finished != null) retired++;
    } catch (error) {
      deps.logger.warn({ err: error, environmentId: lease.environmentId }, 'could not observe lease');
    }
  }
  if (retired > 0) deps.logger.info({ retired }, 'observer retired finished sandboxes');
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
