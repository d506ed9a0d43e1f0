// The lease histograms (provision → Active, release → Released, the whole lease), observed by the
// process that committed the step. The durations come from stored times (the lease row's creation
// and the journal rows), read after the commit, never from a timer: a step whose earlier steps ran
// in another process, or before a restart, is timed all the same. Each step is observed at most
// once: only the commit that left the state sees that transition, and a released or failed lease
// is never revived. A process that dies between the commit and the read loses that observation
// (counted nowhere); one that cannot read it counts `sandlot_lease_timing_errors_total`.
//
// provision → readyForDispatch is no transition: readiness is an inspection's answer. The first
// answer ready marks the lease (first_ready_at, set once across processes) and is observed by the
// process that set it, from the same stored provision time.
import type { CommitListener, CommitNotice } from '../actors/runtime.ts';
import type { SandlotMetrics } from '../lib/metrics.ts';
import type { Queryable } from '../store/db.ts';
import type { LeaseRow } from '../store/leases.ts';
import { leaseTiming, markFirstReady } from '../store/metrics-queries.ts';

const FINAL = new Set(['Released', 'Failed']);

export interface LeaseSteps {
  /** The state a lease entered on leaving Provisioning. */
  provisioned: string | null;
  /** The state a lease entered on leaving Releasing. */
  released: string | null;
  /** The final state a lease reached. */
  finished: string | null;
}

const sandboxOf = (value: unknown): string | null => {
  const sandbox = (value as { sandbox?: unknown } | null)?.sandbox;
  return typeof sandbox === 'string' ? sandbox : null;
};

/** Which lease steps one transition of the sandbox region completed (pure). */
export function leaseSteps(fromState: unknown, toState: unknown): LeaseSteps | null {
  const from = sandboxOf(fromState);
  const to = sandboxOf(toState);
  if (from === null || to === null || from === to) return null;
  return {
    provisioned: from === 'Provisioning' ? to : null,
    released: from === 'Releasing' ? to : null,
    finished: FINAL.has(to) && !FINAL.has(from) ? to : null,
  };
}

const resourceGenerationOf = (snapshot: unknown): number | null => {
  const lease = (snapshot as { context?: { sandbox?: { lease?: { resourceGeneration?: unknown } } } })
    ?.context?.sandbox?.lease;
  return typeof lease?.resourceGeneration === 'number' ? lease.resourceGeneration : null;
};

export function timeLeaseSteps(metrics: SandlotMetrics, db: Queryable): CommitListener {
  const observe = async (notice: CommitNotice & { outcome: 'committed' }, steps: LeaseSteps) => {
    const generation = resourceGenerationOf(notice.snapshot);
    const timing =
      generation === null ? null : await leaseTiming(db, notice.environmentId, notice.revision, generation);
    if (timing === null) {
      metrics.timingErrors.inc();
      return;
    }
    const { provider } = timing;
    if (steps.provisioned !== null)
      metrics.provisionSeconds.observe({ provider, outcome: steps.provisioned }, timing.sinceProvision);
    if (steps.released !== null && timing.sinceRelease !== null)
      metrics.releaseSeconds.observe({ provider, outcome: steps.released }, timing.sinceRelease);
    if (steps.finished !== null)
      metrics.leaseLifetimeSeconds.observe({ provider, outcome: steps.finished }, timing.sinceProvision);
  };
  return (notice) => {
    if (notice.outcome !== 'committed') return;
    const steps = leaseSteps(notice.fromState, notice.toState);
    if (steps === null || (steps.provisioned ?? steps.released ?? steps.finished) === null) return;
    observe(notice, steps).catch(() => metrics.timingErrors.inc());
  };
}

/** How many leases a process remembers as marked ready, so that later answers ask nothing. */
const MARKED_MEMORY = 10_000;

/** The inspection's onReady hook: observes provision → readyForDispatch once per lease. */
export function timeFirstReady(metrics: SandlotMetrics, db: Queryable): (lease: LeaseRow) => void {
  // Leases this process saw marked (by itself or, as the update found, by another): insertion order,
  // the oldest forgotten first. Forgetting one costs an update that matches no row, nothing more.
  const marked = new Set<string>();
  const remember = (operationId: string) => {
    marked.add(operationId);
    if (marked.size > MARKED_MEMORY) marked.delete(marked.values().next().value as string);
  };
  return (lease) => {
    if (marked.has(lease.operationId)) return;
    remember(lease.operationId);
    markFirstReady(db, lease.operationId)
      .then((first) => {
        if (first !== null)
          metrics.provisionReadySeconds.observe(
            { provider: first.provider, outcome: 'ready' },
            first.sinceProvision,
          );
      })
      .catch(() => {
        marked.delete(lease.operationId);
        metrics.timingErrors.inc();
      });
  };
}
