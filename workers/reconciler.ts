// The reconciler: a periodic task, safe on any number of processes. It (1) moves attempts stuck in
// Dispatched past their deadline to Unknown, which puts the lease in ReconciliationRequired,
// (2) asks every lease in ReconciliationRequired to reconcile through an exact listOwned (one listing
// at a time per lease, later each time one fails: store/backoff.ts), and
// (3) sweeps terminal leases for late resources (an exact owner listing, twice, some time after
// the lease ended), and (4) claims late-resource cleanup items that are pending (or whose claim
// expired), one claim per item, each claim opening the item's release attempt.
import type { Logger } from 'pino';
import type { SandlotMetrics } from '../lib/metrics.ts';
import { buildTestsToReopen } from '../store/build-test-operations.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import { expireAttempt, type AttemptDeps } from '../actors/attempts.ts';
import { claimCleanup, claimTtlMs } from '../actors/cleanups.ts';
import { overdueDispatched } from '../store/attempts.ts';
import { claimableCleanups } from '../store/cleanups.ts';
import {
  MAX_SWEEPS_OPENED,
  leasesPastExpiry,
  markSweepOpened,
  readLateSweeps,
  sweepsDue,
} from '../store/leases.ts';
import { leasesNeedingReconciliation } from '../store/leases.ts';
import type { Backoff } from '../store/backoff.ts';
import type { PeriodicTask } from './scheduler.ts';

export interface ReconcilerDeps extends AttemptDeps {
  logger: Logger;
  now?: () => Date;
  batchSize?: number;
  /** The provider call deadline: a cleanup claim lasts twice that plus 5 s (default 30 s). */
  callTimeoutMs?: number;
  /** Sweep n of a terminal lease runs n times this after it ended (default twice the call deadline). */
  lateSweepMs?: number;
  /** Counts each pass and what it did (default: not counted). */
  metrics?: SandlotMetrics;
  /** How long a lease whose listings keep failing waits before the next (default store/backoff.ts). */
  backoff?: Backoff;
}

export interface ReconcileReport {
  expired: number;
  reconciling: number;
  expiredLeases: number;
  swept: number;
  cleanupsClaimed: number;
  /** BuildTest operations whose step was looked at again (still running, uncertain, cleanup due). */
  buildTestsReopened: number;
}

/**
 * Runs `step` for each item, counting the ones it says took effect. One broken Environment (a
 * quarantined snapshot, say) is logged and must not stop the pass for the others.
 */
async function forEach<T>(
  deps: ReconcilerDeps,
  items: readonly T[],
  signal: AbortSignal | undefined,
  failure: { message: string; subject: (item: T) => Record<string, string | number> },
  step: (item: T) => Promise<boolean>,
): Promise<number> {
  let done = 0;
  for (const item of items) {
    if (signal?.aborted === true) break;
    try {
      if (await step(item)) done++;
    } catch (error) {
      deps.logger.error({ err: error, ...failure.subject(item) }, failure.message);
    }
  }
  return done;
}

/** A lease's log fields: its Environment, operation and fences. */
const byEnvironment = (lease: {
  environmentId: string;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
}) => ({
  environmentId: lease.environmentId,
  operationId: lease.operationId,
  resourceGeneration: lease.resourceGeneration,
  providerFence: lease.providerFence,
});

export async function reconcileOnce(deps: ReconcilerDeps, signal?: AbortSignal): Promise<ReconcileReport> {
  const now = (deps.now ?? (() => new Date()))();
  const limit = deps.batchSize ?? 200;
  const context = { actor: deps.actor, source: 'reconciler' } as const;
  const send = async (environmentId: string, event: EnvironmentEvent) =>
    (await deps.runtime.send(environmentId, event, context)).accepted;

  const expired = await forEach(
    deps,
    await overdueDispatched(deps.db, now, limit),
    signal,
    { message: 'could not expire attempt', subject: (a) => ({ attemptId: a.attemptId }) },
    (attempt) => expireAttempt(deps, attempt.attemptId, now),
  );
  const reconciling = await forEach(
    deps,
    await leasesNeedingReconciliation(deps.db, limit, now, deps.backoff),
    signal,
    { message: 'could not start reconciliation', subject: byEnvironment },
    (lease) =>
      send(lease.environmentId, {
        type: 'sandbox.reconcile',
        operationId: lease.operationId,
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
      }),
  );
  // Expired leases: fence first. Nothing is released; the lease is never ready again.
  const expiredLeases = await forEach(
    deps,
    await leasesPastExpiry(deps.db, now, limit),
    signal,
    { message: 'could not fence an expired lease', subject: byEnvironment },
    (lease) =>
      send(lease.environmentId, {
        type: 'sandbox.expire',
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
        at: now.toISOString(),
      }),
  );
  const sweepEvery = deps.lateSweepMs ?? 2 * (deps.callTimeoutMs ?? 30_000);
  const swept = await forEach(
    deps,
    await sweepsDue(deps.db, now, sweepEvery, limit),
    signal,
    { message: 'could not sweep a terminal lease', subject: byEnvironment },
    async (lease) => {
      const sweep = lease.lateSweeps + 1;
      const event: EnvironmentEvent = {
        type: 'cleanup.sweep',
        operationId: lease.operationId,
        lifecycleGeneration: lease.lifecycleGeneration,
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
        ownerHash: lease.ownerHash,
        providerOptions: lease.providerOptions,
        workspace: lease.workspace,
        fencingGeneration: lease.currentFencingGeneration,
        networkPolicyGeneration: lease.networkPolicyGeneration,
        sweep,
      };
      // Every reconciler reads the due leases without a lock: another may have opened this sweep
      // since. Decided under the Environment's lock, so a sweep is opened once and the loser sends
      // nothing (its attempt would collide with the winner's).
      const { sent } = await deps.runtime.step(
        lease.environmentId,
        async (tx) => {
          const opened = await readLateSweeps(tx, lease.environmentId, lease.resourceGeneration);
          return { event: opened !== null && opened < sweep ? event : null, value: undefined };
        },
        context,
      );
      if (sent === null) return false;
      const accepted = 'accepted' in sent && sent.accepted;
      // Refused (the machine would never sweep this lease): close its sweeps, or it is due forever.
      if (!accepted) {
        await markSweepOpened(deps.db, lease.environmentId, lease.resourceGeneration, MAX_SWEEPS_OPENED);
      }
      return accepted;
    },
  );
  const ttl = claimTtlMs(deps.callTimeoutMs);
  const cleanupsClaimed = await forEach(
    deps,
    await claimableCleanups(deps.db, now, limit),
    signal,
    { message: 'could not claim late-resource cleanup', subject: (c) => ({ cleanupId: c.cleanupId }) },
    async (item) => (await claimCleanup(deps, item, now, ttl, context)) !== null,
  );
  // A BuildTest step that ended without finishing (a command still running at the call's deadline,
  // an uncertain outcome, a cleanup that failed) is looked at again: the same step, the same Pod.
  const buildTestsReopened = await forEach(
    deps,
    await buildTestsToReopen(deps.db, new Date(now.getTime() - sweepEvery / 4), limit),
    signal,
    { message: 'could not reopen a BuildTest step', subject: (o) => o },
    (o) => send(o.environmentId, { type: 'command.reconcile', operationId: o.operationId }),
  );
  const report = { expired, reconciling, expiredLeases, swept, cleanupsClaimed, buildTestsReopened };
  if (expired + reconciling + expiredLeases + swept + cleanupsClaimed + buildTestsReopened > 0) {
    deps.logger.info(report, 'reconciler pass');
  }
  deps.metrics?.reconcilerPasses.inc();
  for (const [action, count] of Object.entries(report)) {
    deps.metrics?.reconcilerActions.inc({ action }, count);
  }
  return report;
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
