// Feeds the metrics from the rest of the process: a commit listener on the actor runtime (every
// event's outcome and duration) and the scrape-time reads (PostgreSQL for leases, attempts and the
// outbox; BullMQ, or the in-process queue, for queue depth).
import type { CommitListener } from '../actors/runtime.ts';
import type { SandlotMetrics, StateSources } from '../lib/metrics.ts';
import type { Database } from '../store/db.ts';
import {
  currentLeaseCounts,
  oldestActiveObservationSeconds,
  oldestUnresolvedAttemptSeconds,
  openCleanupCounts,
  outboxLagSeconds,
  parkedLeaseCounts,
  unresolvedAttemptCounts,
} from '../store/metrics-queries.ts';
import type { QueueJobCount } from './queue-inspection.ts';

/** Counts and times every event the runtime handled (`machine` names the actor definition). */
export function countCommits(metrics: SandlotMetrics, machine: string): CommitListener {
  return (notice) => {
    metrics.transitions.inc({ machine, event: notice.event.type, outcome: notice.outcome });
    metrics.transitionSeconds.observe({ machine, outcome: notice.outcome }, notice.durationMs / 1000);
  };
}

export function stateSources(
  db: Database,
  queueJobs?: () => Promise<readonly QueueJobCount[]>,
): StateSources {
  return {
    leases: () => currentLeaseCounts(db),
    unresolvedAttempts: () => unresolvedAttemptCounts(db),
    outboxLagSeconds: () => outboxLagSeconds(db),
    oldestAttemptSeconds: () => oldestUnresolvedAttemptSeconds(db),
    observationAgeSeconds: () => oldestActiveObservationSeconds(db),
    openCleanups: () => openCleanupCounts(db),
    parkedLeases: () => parkedLeaseCounts(db),
    ...(queueJobs === undefined ? {} : { queueJobs }),
  };
}
