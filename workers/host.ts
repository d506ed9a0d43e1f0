// Starts the worker side in this process: the effect queue (BullMQ when Redis is configured,
// in-process otherwise: the same processor either way), the outbox relay, and the reconciler and
// observer on a schedule. The runtime's after-commit hand-off publishes at once; the relay is the
// guarantee. An API-only process (`processEffects: false`) only publishes: it runs no processor,
// relay poll or schedule, but its committed effects still reach the queue without waiting.
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { SandlotMetrics } from '../lib/metrics.ts';
import type { EnvironmentRuntime } from '../actors/services.ts';
import type { NetworkPolicyVerifier, ProjectsAuthority, RunSelectionSource } from '../actors/ports.ts';
import { hasChangeFeed, type SandboxProvider } from '../providers/provider.ts';
import type { Database } from '../store/db.ts';
import { GrantsAuthority } from '../store/grants.ts';
import { TableNetworkPolicies } from '../store/network-policies.ts';
import { TableRunSelections } from '../store/run-selections.ts';
import { BullmqEffectQueue } from './bullmq-effect-queue.ts';
import { BullmqScheduler } from './bullmq-scheduler.ts';
import { attemptRunner, effectProcessor, type EffectProcessorDeps } from './effect-processor.ts';
import type { BuildTestWorkerDeps } from './build-test-step.ts';
import type { EffectQueue } from './effect-queue.ts';
import { InProcessEffectQueue } from './in-process-effect-queue.ts';
import { OutboxRelay } from './outbox-relay.ts';
import { observerTask, type ObserverDeps } from './observer.ts';
import { followChangeFeed, type FeedFollower } from './observe-feed.ts';
import { reconcilerTask } from './reconciler.ts';
import { prunerTask } from './pruner.ts';
import { InProcessScheduler, type Scheduler } from './scheduler.ts';
import { backoffWithMax, defaultBackoff } from '../store/backoff.ts';
import { withTimeout } from './deadline.ts';

export interface WorkerSettings {
  redisUrl?: string;
  /** BullMQ key prefix (default `sandlot`). */
  prefix?: string;
  concurrency?: number;
  callTimeoutMs?: number;
  reconcileEveryMs?: number;
  /** Sweep n of a terminal lease for late resources runs n times this after it ended (default 2 × callTimeoutMs). */
  lateSweepMs?: number;
  /** Period of the observer that describes Active leases (default 15 s). */
  observeEveryMs?: number;
  /**
   * With a provider change feed, how long a lease goes undescribed before the observer's pass takes
   * it anyway (default 5 min); without a feed every pass takes the least recently observed.
   */
  observeResyncMs?: number;
  /** Follow the provider's change feed when it has one (default true). */
  followChanges?: boolean;
  /** The longest a lease waits between listings or describes that keep failing (default 30 s). */
  backoffMaxMs?: number;
  /** Period of the pruner (default 10 min). */
  pruneEveryMs?: number;
  /** Days a Released Environment's journal is kept whole (default 30). */
  retentionDays?: number;
  republishAfterMs?: number;
  /** BullMQ job lock and stall-check period (default 5 s). */
  queueLockMs?: number;
  relayPollMs?: number;
  /** Run effect processors, the relay poll and the schedules here (false: an API-only process). */
  processEffects?: boolean;
}

export interface WorkerDeps {
  db: Database;
  runtime: EnvironmentRuntime;
  provider: SandboxProvider;
  logger: Logger;
  /**
   * Verifies a provision's network policy right before dispatch. Default: the embedded registry
   * (`TableNetworkPolicies`); a deployment on Agent Sandbox passes the Cilium verifier.
   */
  networkPolicies?: NetworkPolicyVerifier;
  /**
   * Whose fresh authority a result that could make a lease dispatchable is committed under.
   * Default: the embedded grants and run-selection tables; production passes its HTTP clients.
   */
  authority?: ProjectsAuthority;
  selections?: RunSelectionSource;
  /** Provider calls, queue waits, reconciler and observer counts go here (default: not counted). */
  metrics?: SandlotMetrics;
  /** BuildTest steps (the provider's Pods, Core, the profile); absent: no BuildTest here. */
  buildTest?: BuildTestWorkerDeps;
}

export interface WorkerHost {
  queue: EffectQueue;
  relay: OutboxRelay;
  /**
   * Why this process cannot do its work now, for the worker's /readyz: the database does not
   * answer `SELECT 1` within `timeoutMs`, a Redis connection is not ready, the queue or schedule is
   * not running, or the host was closed. Empty when all of it is usable.
   */
  unreadiness(timeoutMs?: number): Promise<string[]>;
  close(): Promise<void>;
}

/** The database answers within `timeoutMs`, or why not (never throws). */
async function databaseUnreadiness(db: Database, timeoutMs: number): Promise<string | null> {
  try {
    await withTimeout(db.query('SELECT 1'), timeoutMs, () => new Error(`no answer in ${timeoutMs} ms`));
    return null;
  } catch (error) {
    return `database does not answer: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** The journal's name for this process when it runs attempts. */
export const workerActor = (): string => `worker:${hostname()}:${process.pid}`;

/** What the one attempt runner needs, for queue jobs and for runs a request or the observer awaits. */
export function runnerDeps(deps: WorkerDeps, callTimeoutMs = 30_000): EffectProcessorDeps {
  return {
    db: deps.db,
    runtime: deps.runtime,
    actor: workerActor(),
    provider: deps.provider,
    networkPolicies: deps.networkPolicies ?? new TableNetworkPolicies(deps.db),
    authority: deps.authority ?? new GrantsAuthority(deps.db),
    selections: deps.selections ?? new TableRunSelections(deps.db),
    logger: deps.logger.child({ component: 'workers' }),
    callTimeoutMs,
    ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
    ...(deps.buildTest === undefined ? {} : { buildTest: deps.buildTest }),
  };
}

const metricsOf = (deps: WorkerDeps) => (deps.metrics === undefined ? {} : { metrics: deps.metrics });

export async function startWorkers(deps: WorkerDeps, settings: WorkerSettings = {}): Promise<WorkerHost> {
  const logger = deps.logger.child({ component: 'workers' });
  const processing = settings.processEffects !== false;
  const queue: EffectQueue =
    settings.redisUrl === undefined
      ? new InProcessEffectQueue({ concurrency: settings.concurrency ?? 4, logger, ...metricsOf(deps) })
      : new BullmqEffectQueue({
          redis: settings.redisUrl,
          prefix: settings.prefix ?? 'sandlot',
          concurrency: settings.concurrency ?? 8,
          ...(settings.queueLockMs === undefined ? {} : { lockDurationMs: settings.queueLockMs }),
          logger,
          ...metricsOf(deps),
        });
  const relay = new OutboxRelay({
    db: deps.db,
    queue,
    logger,
    republishAfterMs: settings.republishAfterMs ?? 5_000,
    pollIntervalMs: settings.relayPollMs ?? 1_000,
  });
  deps.runtime.setEffectSink((rows) => void relay.publishNow(rows));
  let scheduler: Scheduler | null = null;
  let follower: FeedFollower | null = null;
  if (processing) {
    const runner = runnerDeps(deps, settings.callTimeoutMs);
    const backoff = backoffWithMax(settings.backoffMaxMs ?? defaultBackoff.maxMs);
    queue.start(effectProcessor(runner));
    const feed = settings.followChanges !== false && hasChangeFeed(deps.provider) ? deps.provider : null;
    const observer: ObserverDeps = {
      ...runner,
      runner: attemptRunner(runner),
      logger,
      backoff,
      describeTimeoutMs: runner.callTimeoutMs,
      ...(feed === null ? {} : { resyncMs: settings.observeResyncMs ?? 300_000 }),
    };
    if (feed !== null) follower = followChangeFeed(observer, feed);
    const tasks = [
      reconcilerTask(
        {
          ...runner,
          logger,
          backoff,
          ...(settings.lateSweepMs === undefined ? {} : { lateSweepMs: settings.lateSweepMs }),
        },
        settings.reconcileEveryMs ?? 5_000,
      ),
      observerTask(observer, settings.observeEveryMs ?? 15_000),
      prunerTask(
        { db: deps.db, logger, retentionDays: settings.retentionDays ?? 30 },
        settings.pruneEveryMs ?? 600_000,
      ),
    ];
    scheduler =
      settings.redisUrl === undefined
        ? new InProcessScheduler(tasks, { logger })
        : new BullmqScheduler({
            redis: settings.redisUrl,
            prefix: settings.prefix ?? 'sandlot',
            tasks,
            logger,
          });
    relay.start();
    await scheduler.start();
  }
  logger.info(
    { transport: settings.redisUrl === undefined ? 'in-process' : 'bullmq', processing },
    processing ? 'workers started' : 'effect publisher started (API only)',
  );
  let closed = false;
  return {
    queue,
    relay,
    async unreadiness(timeoutMs = 2_000) {
      if (closed) return ['workers are stopped'];
      const database = await databaseUnreadiness(deps.db, timeoutMs);
      return [
        ...(database === null ? [] : [database]),
        ...queue.unreadiness(),
        ...(scheduler?.unreadiness() ?? []),
      ];
    },
    async close() {
      closed = true;
      deps.runtime.setEffectSink(() => undefined);
      await follower?.close();
      // Side by side: each may wait its whole close timeout for running jobs, and one after the
      // other those two waits (and their bounded aborts) came near the process's grace period.
      await Promise.all([
        scheduler?.close(),
        (async () => {
          await relay.stop();
          await queue.close();
        })(),
      ]);
    },
  };
}
