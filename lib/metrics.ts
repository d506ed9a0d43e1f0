// Every Prometheus series Sandlot exports, in one registry per process. Counters and histograms
// are fed as things happen (commits, requests, provider calls, reconciler passes, queue starts);
// the state gauges (leases, unresolved attempts, outbox lag, queue depth) are read at scrape time
// from `StateSources`, so a scrape costs a few bounded queries and nothing runs between scrapes.
// Labels are bounded sets (machine events, route patterns, attempt kinds, lease states): never an
// ID, a raw path or anything a caller chose. docs/operations.md lists each series and its meaning.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const METRIC_PREFIX = 'sandlot_';

/** Seconds: a commit or a provider call takes milliseconds to tens of seconds. */
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900];
/** Seconds: a lease's steps take seconds (simulated) to hours (a long-lived sandbox). */
const LIFECYCLE_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 14_400, 86_400];

export interface CountRow {
  count: number;
}

/** What the scrape-time gauges read (one cheap query each); absent sources leave a gauge empty. */
export interface StateSources {
  leases?: () => Promise<readonly (CountRow & { state: string })[]>;
  unresolvedAttempts?: () => Promise<readonly (CountRow & { kind: string; state: string; age: string })[]>;
  /** Age in seconds of the oldest outbox row not yet published (0: none). */
  outboxLagSeconds?: () => Promise<number>;
  queueJobs?: () => Promise<readonly (CountRow & { queue: string; state: string })[]>;
  /** Age in seconds of the oldest Dispatched and the oldest Unknown attempt (0: none). */
  oldestAttemptSeconds?: () => Promise<readonly { state: string; seconds: number }[]>;
  /** Seconds since the least recently observed Active lease was observed (0: no Active lease). */
  observationAgeSeconds?: () => Promise<number>;
  openCleanups?: () => Promise<readonly (CountRow & { state: string })[]>;
  /** Leases parked in ReconciliationRequired for a lapsed authority, by reason. */
  parkedLeases?: () => Promise<readonly (CountRow & { reason: string })[]>;
}

export interface SandlotMetrics {
  registry: Registry;
  transitions: Counter<'machine' | 'event' | 'outcome'>;
  transitionSeconds: Histogram<'machine' | 'outcome'>;
  httpSeconds: Histogram<'method' | 'route' | 'status'>;
  providerCallSeconds: Histogram<'kind' | 'outcome'>;
  jobWaitSeconds: Histogram<'queue'>;
  /** From a lease's provision commit to its leaving Provisioning (outcome: the state it entered). */
  provisionSeconds: Histogram<'provider' | 'outcome'>;
  /** From a lease's provision commit to the first inspection that answered it ready for dispatch. */
  provisionReadySeconds: Histogram<'provider' | 'outcome'>;
  /** From the lease entering Releasing to its leaving it (outcome: the state it entered). */
  releaseSeconds: Histogram<'provider' | 'outcome'>;
  /** From a lease's provision commit to its final state (Released or Failed). */
  leaseLifetimeSeconds: Histogram<'provider' | 'outcome'>;
  /** Lease timings that could not be read after their commit (that observation is missing). */
  timingErrors: Counter;
  reconcilerPasses: Counter;
  reconcilerActions: Counter<'action'>;
  observerRetired: Counter;
  workspaceConflicts: Counter;
  /** Reads the state gauges from these from now on (the composition root calls it once). */
  readStateFrom(sources: StateSources): void;
}

export interface MetricsOptions {
  /** Process and Node.js metrics (CPU, memory, event loop, GC) with the same prefix (default true). */
  defaults?: boolean;
}

export function createMetrics(options: MetricsOptions = {}): SandlotMetrics {
  const registry = new Registry();
  if (options.defaults !== false) collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  const registers = [registry];
  let sources: StateSources = {};

  const collectErrors = new Counter({
    name: `${METRIC_PREFIX}metrics_collect_errors_total`,
    help: 'Scrape-time reads that failed (the gauge is left empty for that scrape), by source',
    labelNames: ['source'],
    registers,
  });
  /** One gauge read at scrape time; a failing source is counted, never a failed scrape. */
  const stateGauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    read: (gauge: Gauge<L>) => Promise<void>,
  ) =>
    new Gauge<L>({
      name: `${METRIC_PREFIX}${name}`,
      help,
      labelNames,
      registers,
      async collect() {
        this.reset();
        try {
          await read(this);
        } catch {
          collectErrors.inc({ source: name });
        }
      },
    });

  stateGauge('leases', 'Current (non-terminal) sandbox leases by state', ['state'], async (gauge) => {
    for (const row of (await sources.leases?.()) ?? []) gauge.set({ state: row.state }, row.count);
  });
  stateGauge(
    'unresolved_attempts',
    'Provider attempts not yet resolved (Pending, Dispatched, Unknown) by kind, state and age bucket',
    ['kind', 'state', 'age'],
    async (gauge) => {
      for (const { kind, state, age, count } of (await sources.unresolvedAttempts?.()) ?? []) {
        gauge.set({ kind, state, age }, count);
      }
    },
  );
  stateGauge(
    'outbox_lag_seconds',
    'Age of the oldest outbox row not yet published to the effect queue (0 when none waits)',
    [],
    async (gauge) => {
      if (sources.outboxLagSeconds !== undefined) gauge.set(await sources.outboxLagSeconds());
    },
  );
  stateGauge(
    'oldest_unresolved_attempt_age_seconds',
    'Age of the oldest Dispatched and the oldest Unknown provider attempt, since dispatch (0 when none)',
    ['state'],
    async (gauge) => {
      for (const { state, seconds } of (await sources.oldestAttemptSeconds?.()) ?? []) {
        gauge.set({ state }, seconds);
      }
    },
  );
  stateGauge(
    'oldest_active_observation_age_seconds',
    'Seconds since the least recently observed Active lease was observed (0 when no lease is Active)',
    [],
    async (gauge) => {
      if (sources.observationAgeSeconds !== undefined) gauge.set(await sources.observationAgeSeconds());
    },
  );
  stateGauge(
    'open_cleanups',
    'Late-resource cleanups not yet released, by state',
    ['state'],
    async (gauge) => {
      for (const row of (await sources.openCleanups?.()) ?? []) gauge.set({ state: row.state }, row.count);
    },
  );
  stateGauge(
    'parked_leases',
    'Leases parked in ReconciliationRequired for a lapsed authority or run selection, by reason',
    ['reason'],
    async (gauge) => {
      for (const row of (await sources.parkedLeases?.()) ?? []) gauge.set({ reason: row.reason }, row.count);
    },
  );
  stateGauge('queue_jobs', 'Jobs per queue and state', ['queue', 'state'], async (gauge) => {
    for (const row of (await sources.queueJobs?.()) ?? [])
      gauge.set({ queue: row.queue, state: row.state }, row.count);
  });

  return {
    registry,
    transitions: new Counter({
      name: `${METRIC_PREFIX}transitions_total`,
      help: 'Events an actor runtime handled, by machine, event type and outcome (committed, ignored, rejected)',
      labelNames: ['machine', 'event', 'outcome'],
      registers,
    }),
    transitionSeconds: new Histogram({
      name: `${METRIC_PREFIX}transition_duration_seconds`,
      help: "An event's whole transaction (lock wait included), by machine and outcome",
      labelNames: ['machine', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    httpSeconds: new Histogram({
      name: `${METRIC_PREFIX}http_request_duration_seconds`,
      help: 'HTTP requests by method, matched route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    providerCallSeconds: new Histogram({
      name: `${METRIC_PREFIX}provider_call_duration_seconds`,
      help: 'Provider calls made by the attempt runner, by attempt kind and outcome (Succeeded, Failed, Unknown)',
      labelNames: ['kind', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    jobWaitSeconds: new Histogram({
      name: `${METRIC_PREFIX}queue_job_wait_seconds`,
      help: "From a job's publish to its first start, by queue",
      labelNames: ['queue'],
      buckets: WAIT_BUCKETS,
      registers,
    }),
    provisionSeconds: new Histogram({
      name: `${METRIC_PREFIX}provision_duration_seconds`,
      help: 'From the provision commit to the lease leaving Provisioning, by provider and the state it entered (Active, Failed, ReconciliationRequired, Releasing)',
      labelNames: ['provider', 'outcome'],
      buckets: LIFECYCLE_BUCKETS,
      registers,
    }),
    provisionReadySeconds: new Histogram({
      name: `${METRIC_PREFIX}provision_ready_duration_seconds`,
      help: 'From the provision commit to the first inspection that answered the lease ready for dispatch, by provider (outcome: ready)',
      labelNames: ['provider', 'outcome'],
      buckets: LIFECYCLE_BUCKETS,
      registers,
    }),
    releaseSeconds: new Histogram({
      name: `${METRIC_PREFIX}release_duration_seconds`,
      help: 'From the lease entering Releasing to its leaving it, by provider and the state it entered (Released, ReconciliationRequired)',
      labelNames: ['provider', 'outcome'],
      buckets: LIFECYCLE_BUCKETS,
      registers,
    }),
    leaseLifetimeSeconds: new Histogram({
      name: `${METRIC_PREFIX}lease_lifetime_seconds`,
      help: 'From the provision commit to the final state of the lease, by provider and final state (Released, Failed)',
      labelNames: ['provider', 'outcome'],
      buckets: LIFECYCLE_BUCKETS,
      registers,
    }),
    timingErrors: new Counter({
      name: `${METRIC_PREFIX}lease_timing_errors_total`,
      help: 'Lease timings that could not be read after their commit (that observation is missing)',
      registers,
    }),
    reconcilerPasses: new Counter({
      name: `${METRIC_PREFIX}reconciler_passes_total`,
      help: 'Reconciler passes run by this process',
      registers,
    }),
    reconcilerActions: new Counter({
      name: `${METRIC_PREFIX}reconciler_actions_total`,
      help: 'What reconciler passes did, by action (expired, reconciling, expiredLeases, swept, cleanupsClaimed, buildTestsReopened)',
      labelNames: ['action'],
      registers,
    }),
    observerRetired: new Counter({
      name: `${METRIC_PREFIX}observer_retired_total`,
      help: 'Sandboxes the observer found finished and retired',
      registers,
    }),
    workspaceConflicts: new Counter({
      name: `${METRIC_PREFIX}workspace_conflicts_total`,
      help: 'Late resources recorded while their Workspace volume was held by another lease (released first)',
      registers,
    }),
    readStateFrom(next) {
      sources = next;
    },
  };
}
