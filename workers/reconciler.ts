// The reconciler: a periodic task, safe on any number of processes. It (1) moves attempts stuck in
// Dispatched past their deadline to Unknown, which puts the lease in ReconciliationRequired,
// (2) asks every lease in ReconciliationRequired to reconcile through an exact listOwned, and
// (3) sweeps terminal leases for late resources (an exact owner listing, twice, some time after
// the lease ended), and (4) claims late-resource cleanup items that are pending (or whose claim
// expired), one claim per item, each claim opening the item's release attempt.
import type { Logger } from 'pino';
import { expireAttempt, type AttemptDeps } from '../actors/attempts.ts';
import { claimCleanup, claimTtlMs } from '../actors/cleanups.ts';
import { overdueDispatched } from '../store/attempts.ts';
import { claimableCleanups } from '../store/cleanups.ts';
import { leasesPastExpiry, markSweepOpened, sweepsDue } from '../store/leases.ts';
import { leasesNeedingReconciliation } from '../store/leases.ts';
import type { PeriodicTask } from './scheduler.ts';

export interface ReconcilerDeps extends AttemptDeps {
  logger: Logger;
  now?: () => Date;
  batchSize?: number;
  /** The provider call deadline: a cleanup claim lasts twice that plus 5 s (default 30 s). */
  callTimeoutMs?: number;
  /** Sweep n of a terminal lease runs n times this after it ended (default twice the call deadline). */
  lateSweepMs?: number;
}

export interface ReconcileReport {
  expired: number;
  reconciling: number;
  expiredLeases: number;
  swept: number;
  cleanupsClaimed: number;
}

export async function reconcileOnce(deps: ReconcilerDeps, signal?: AbortSignal): Promise<ReconcileReport> {
  const now = (deps.now ?? (() => new Date()))();
  const limit = deps.batchSize ?? 200;
  let expired = 0;
  for (const attempt of await overdueDispatched(deps.db, now, limit)) {
    if (signal?.aborted === true) break;
    // One broken Environment (a quarantined snapshot) must not stop the pass for the others.
    try {
      if (await expireAttempt(deps, attempt.attemptId, now)) expired++;
    } catch (error) {
      deps.logger.error({ err: error, attemptId: attempt.attemptId }, 'could not expire attempt');
    }
  }
  let reconciling = 0;
  for (const lease of await leasesNeedingReconciliation(deps.db, limit)) {
    if (signal?.aborted === true) break;
    try {
      const outcome = await deps.runtime.send(
        lease.environmentId,
        {
          type: 'sandbox.reconcile',
          operationId: lease.operationId,
          resourceGeneration: lease.resourceGeneration,
          providerFence: lease.providerFence,
        },
        { actor: deps.actor },
      );
      if (outcome.accepted) reconciling++;
    } catch (error) {
      deps.logger.error({ err: error, environmentId: lease.environmentId }, 'could not start reconciliation');
    }
  }
  // Expired leases: fence first. Nothing is released; the lease is never ready again.
  let expiredLeases = 0;
  for (const lease of await leasesPastExpiry(deps.db, now, limit)) {
    if (signal?.aborted === true) break;
    try {
      const outcome = await deps.runtime.send(
        lease.environmentId,
        {
          type: 'sandbox.expire',
          resourceGeneration: lease.resourceGeneration,
          providerFence: lease.providerFence,
          at: now.toISOString(),
        },
        { actor: deps.actor },
      );
      if (outcome.accepted) expiredLeases++;
    } catch (error) {
      deps.logger.error(
        { err: error, environmentId: lease.environmentId },
        'could not fence an expired lease',
      );
    }
  }
  let swept = 0;
  const sweepEvery = deps.lateSweepMs ?? 2 * (deps.callTimeoutMs ?? 30_000);
  for (const lease of await sweepsDue(deps.db, now, sweepEvery, limit)) {
    if (signal?.aborted === true) break;
    try {
      const sweep = lease.lateSweeps + 1;
      const source = lease;
      const outcome = await deps.runtime.send(
        lease.environmentId,
        {
          type: 'cleanup.sweep',
          operationId: source.operationId,
          lifecycleGeneration: source.lifecycleGeneration,
          resourceGeneration: source.resourceGeneration,
          providerFence: source.providerFence,
          ownerHash: source.ownerHash,
          providerOptions: source.providerOptions,
          workspace: source.workspace,
          fencingGeneration: source.currentFencingGeneration,
          networkPolicyGeneration: source.networkPolicyGeneration,
          sweep,
        },
        { actor: deps.actor },
      );
      if (outcome.accepted) swept++;
      // Refused (the machine would never sweep this lease): count it anyway, or it is due forever.
      else await markSweepOpened(deps.db, lease.environmentId, lease.resourceGeneration, sweep);
    } catch (error) {
      deps.logger.error(
        { err: error, environmentId: lease.environmentId },
        'could not sweep a terminal lease',
      );
    }
  }
  let cleanupsClaimed = 0;
  for (const item of await claimableCleanups(deps.db, now, limit)) {
    if (signal?.aborted === true) break;
    try {
      const ttl = claimTtlMs(deps.callTimeoutMs);
      if ((await claimCleanup(deps, item, now, ttl, { actor: deps.actor })) !== null) cleanupsClaimed++;
    } catch (error) {
      deps.logger.error({ err: error, cleanupId: item.cleanupId }, 'could not claim late-resource cleanup');
    }
  }
  if (expired + reconciling + expiredLeases + swept + cleanupsClaimed > 0) {
    deps.logger.info({ expired, reconciling, expiredLeases, swept, cleanupsClaimed }, 'reconciler pass');
  }
  return { expired, reconciling, expiredLeases, swept, cleanupsClaimed };
}

export function reconcilerTask(deps: ReconcilerDeps, everyMs: number): PeriodicTask {
  return {
    name: 'reconcile',
    everyMs,
    run: async (signal) => {
      await reconcileOnce(deps, signal);
    },
  };
}
