// The observer: a periodic task that describes Active leases exactly, through the one attempt
// runner, so phases stay current and a sandbox whose run finished (Finished=True,
// PodSucceeded/PodFailed) retires its placement without anyone asking. It never releases the
// Environment; retirement only ends the lease. Leases are taken least recently observed first; one
// whose describes keep failing waits longer each time (store/backoff.ts), and a provider that fails
// for most of the leases asked in a pass is asked about no more of them in that pass. A pass runs
// up to `concurrency` describes at once (8).
import type { Logger } from 'pino';
import type { SandlotMetrics } from '../lib/metrics.ts';
import type { AttemptDeps } from '../actors/attempts.ts';
import type { AttemptRunner } from '../actors/ports.ts';
import { observeLease } from '../actors/sandbox/observe.ts';
import { defaultBackoff, type Backoff } from '../store/backoff.ts';
import { activeLeases, recordObservation, type LeaseRow } from '../store/leases.ts';
import type { PeriodicTask } from './scheduler.ts';

export interface ObserverDeps extends AttemptDeps {
  runner: AttemptRunner;
  logger: Logger;
  describeTimeoutMs: number;
  batchSize?: number;
  /** Counts the sandboxes it retires (default: not counted). */
  metrics?: SandlotMetrics;
  /** How long a lease whose describes keep failing is left alone (default store/backoff.ts). */
  backoff?: Backoff;
  now?: () => Date;
  /** Describes in flight at once in one pass (default 8). */
  concurrency?: number;
  /**
   * Set when the provider has a change feed (workers/observe-feed.ts): a pass then takes only leases
   * not described for this long, as a slow resync that finds what the feed missed.
   */
  resyncMs?: number;
}

/** Observations that say nothing about the provider (the lease moved on under the observer). */
const notAboutProvider = new Set(['lease-moved-on', 'superseded']);

/** One pass: the least recently observed Active leases, `batchSize` of them (default 100). */
export async function observeOnce(deps: ObserverDeps, signal?: AbortSignal): Promise<number> {
  const now = deps.now ?? (() => new Date());
  const at = now();
  const before = deps.resyncMs === undefined ? null : new Date(at.getTime() - deps.resyncMs);
  const leases = await activeLeases(deps.db, deps.batchSize ?? 100, at, before);
  return observeLeases(deps, leases, signal);
}

/** Describes these leases, `concurrency` at a time; returns how many it retired. */
export async function observeLeases(
  deps: ObserverDeps,
  leases: LeaseRow[],
  signal?: AbortSignal,
): Promise<number> {
  const backoff = deps.backoff ?? defaultBackoff;
  const now = deps.now ?? (() => new Date());
  let retired = 0;
  // Per provider, this pass: describes that got an answer or not. A provider failing for most of
  // its leases is asked no more this pass, and each lease it failed waits longer.
  const asked = new Map<string, { tried: number; failed: number }>();
  const failing = (tally: { tried: number; failed: number }) =>
    tally.tried >= backoff.providerQuorum && 2 * tally.failed >= tally.tried;
  let held = 0;
  const observeOne = async (lease: LeaseRow): Promise<void> => {
    const recorded = lease.providerIdentity['providerId'];
    const providerId = typeof recorded === 'string' ? recorded : '';
    const tally = asked.get(providerId) ?? { tried: 0, failed: 0 };
    asked.set(providerId, tally);
    if (failing(tally)) {
      held++;
      return;
    }
    try {
      const observation = await observeLease(deps, lease, { actor: deps.actor, source: 'observer' });
      if (observation === null || notAboutProvider.has(observation.error?.code ?? '')) return;
      const answered = observation.error === null;
      tally.tried++;
      if (!answered) tally.failed++;
      await recordObservation(
        deps.db,
        lease,
        answered,
        now(),
        backoff,
        failing(tally) ? backoff.providerFactor : 1,
      );
      if (observation.finished != null) retired++;
    } catch (error) {
      // A quarantined Environment, a lost race: the others still get observed.
      const { environmentId, operationId, resourceGeneration, providerFence } = lease;
      deps.logger.warn(
        { err: error, environmentId, operationId, resourceGeneration, providerFence },
        'could not observe lease',
      );
    }
  };
  // A few describes at once, never one lease at a time: each lane takes the next lease.
  let next = 0;
  const lane = async () => {
    for (let lease = leases[next++]; lease !== undefined; lease = leases[next++]) {
      if (signal?.aborted === true) return;
      await observeOne(lease);
    }
  };
  await Promise.all(Array.from({ length: Math.min(deps.concurrency ?? 8, leases.length) }, lane));
  if (retired > 0) deps.logger.info({ retired }, 'observer retired finished sandboxes');
  if (held > 0) {
    const providers = [...asked].filter(([, t]) => failing(t)).map(([id]) => id);
    deps.logger.warn({ providers, held }, 'observer held back leases of a provider that is not answering');
  }
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
