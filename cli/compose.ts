// The composition root: the one place that picks implementations for the ports from the
// configuration. Everything below it takes its dependencies as arguments.
import { createPublicKey } from 'node:crypto';
import type { Logger } from 'pino';
import { environmentDefinition } from '../actors/environment-definition.ts';
import { createEnvironmentRuntime, createServices, type Services } from '../actors/services.ts';
import { EmbeddedAgentHost, UnreachableAgentHost } from '../actors/agenthost/embedded.ts';
import { EmbeddedCore } from '../actors/build-test/core-embedded.ts';
import { TableNetworkPolicyWriter } from '../actors/sandbox/network-policy-writer-embedded.ts';
import type { NetworkPolicyWriter } from '../actors/sandbox/network-policy-writer.ts';
import { EmbeddedRuntimeCore } from '../actors/runtime-core/runtime-core-embedded.ts';
import { EmbeddedRuntimeEvents } from '../actors/runtime-events/runtime-events-embedded.ts';
import type { RuntimeEvents } from '../actors/runtime-events/ports.ts';
import { coreActorOf, type BuildTestOffer } from '../actors/build-test/service.ts';
import type { BuildTestWorkerDeps } from '../workers/build-test-step.ts';
import type {
  AgentHost,
  CoreActor,
  NetworkPolicyVerifier,
  ProjectsAuthority,
  RunSelectionSource,
  RuntimeCore,
  WorkspaceStorage,
} from '../actors/ports.ts';
import { buildTestRunnerOffered } from '../config/build-test-profile.ts';
import { coreTokenExpiry } from '../config/core-token.ts';
import type { Config } from '../config/types.ts';
import { createApp } from '../http/app.ts';
import { loadOrCreateDevKey } from '../http/auth/dev-key.ts';
import { createTokenVerifier, type TokenVerifier } from '../http/auth/verify.ts';
import { HttpsAgentHost } from '../http/clients/agenthost-client.ts';
import { HttpCore } from '../http/clients/core-client.ts';
import { HttpProjectsAuthority } from '../http/clients/projects-client.ts';
import { HttpRunSelections } from '../http/clients/run-selection-client.ts';
import { HttpRuntimeCore } from '../http/clients/runtime-core-client.ts';
import type { CommitListener } from '../actors/runtime.ts';
import { enableTimeline, mark, timelineNow } from '../lib/timeline.ts';
import { HttpRuntimeEvents } from '../http/clients/runtime-events-client.ts';
import { createMetrics, type SandlotMetrics } from '../lib/metrics.ts';
import { startMetricsServer, type MetricsServer } from '../lib/metrics-server.ts';
import type { SandboxProvider } from '../providers/provider.ts';
// Types only: the adapter's modules themselves are imported when it is configured (agentSandboxFactoriesFor).
import type { createAgentSandbox as CreateAgentSandbox } from '../providers/agent-sandbox/create-provider.ts';
import type { createAgentSandboxBuildTestRunner as CreateAgentSandboxBuildTestRunner } from '../providers/agent-sandbox/build-test-runner.ts';
import { SimulatedProvider } from '../providers/simulated/simulated-provider.ts';
import { SimulatedBuildTestRunner } from '../providers/simulated/build-test-runner.ts';
import { controlHandlersFor } from '../providers/sandbox-host/assignments.ts';
import { createPgHostCertificateDirectory } from '../providers/sandbox-host/certificate-rotation.ts';
import { startControlListener, type ControlListener } from '../providers/sandbox-host/control-listener.ts';
import { SandboxHostProvider } from '../providers/sandbox-host/provider.ts';
import { loadSandboxHostSettings, type SandboxHostSettings } from '../providers/sandbox-host/settings.ts';
import { loadTrust } from '../providers/sandbox-host/trust-store.ts';
import { attemptRunner } from '../workers/effect-processor.ts';
import { startChangeFeed, type ChangeFeed } from '../workers/change-feed.ts';
import { runnerDeps, startWorkers, type WorkerHost } from '../workers/host.ts';
import { InProcessEffectQueue } from '../workers/in-process-effect-queue.ts';
import { countCommits, stateSources } from '../workers/metrics-sources.ts';
import { timeFirstReady, timeLeaseSteps } from '../workers/lease-timings.ts';
import { reportWorkspaceConflicts } from '../actors/workspace/conflicts.ts';
import { inProcessJobCounts, inspectQueues, type QueueInspection } from '../workers/queue-inspection.ts';
import type { Database } from '../store/db.ts';
import { GrantsAuthority } from '../store/grants.ts';
import { TableNetworkPolicies } from '../store/network-policies.ts';
import { TableRunSelections } from '../store/run-selections.ts';
import { dataDirOf, openDatabase } from './context.ts';
import { migrateFor } from './migrations.ts';

export interface Sandlot {
  db: Database;
  app: ReturnType<typeof createApp>;
  services: Services;
  provider: SandboxProvider;
  workers: WorkerHost | null;
  /** Where GET /metrics answers (SANDLOT_METRICS_PORT), or null when no listener is configured. */
  metricsUrl: string | null;
  /** The sandbox-host control listener's bound address, or null when this process runs none. */
  hostControl: { host: string; port: number } | null;
  /** The Environment runtime, for commit listeners (the inspector bridge). */
  runtime: ReturnType<typeof createEnvironmentRuntime>;
  close(): Promise<void>;
}

async function verifierFor(config: Config): Promise<TokenVerifier> {
  const { issuer, audience, jwksUrl, algorithms } = config.auth;
  if (config.mode === 'embedded') {
    return createTokenVerifier({
      kind: 'hs256',
      key: await loadOrCreateDevKey(dataDirOf(config)),
      issuer,
      audience,
    });
  }
  if (jwksUrl === undefined) throw new Error('SANDLOT_JWKS_URL is required in production mode');
  return createTokenVerifier({ kind: 'jwks', jwksUrl, issuer, audience, algorithms });
}

/** The internal services' clients trust the service-backend-ca when it is configured. */
function servicePin(config: Config): { caPem?: string } {
  return config.serviceBackendCaPem === undefined ? {} : { caPem: config.serviceBackendCaPem };
}

function portsFor(
  config: Config,
  db: Database,
): { authority: ProjectsAuthority; selections: RunSelectionSource } {
  if (config.mode === 'embedded')
    return { authority: new GrantsAuthority(db), selections: new TableRunSelections(db) };
  if (config.projectsUrl === undefined || config.runSelectionUrl === undefined) {
    throw new Error('SANDLOT_PROJECTS_URL and SANDLOT_RUN_SELECTION_URL are required in production mode');
  }
  const pin = servicePin(config);
  return {
    authority: new HttpProjectsAuthority(config.projectsUrl, undefined, pin),
    selections: new HttpRunSelections(config.runSelectionUrl, undefined, pin),
  };
}

export interface ComposeOptions {
  /** Start the effect workers, relay and reconciler in this process (default true). */
  workers?: boolean;
  /** Where provider-specific settings are read (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Start the sandbox-host control listener in this process (default false): the process that
   * serves the API does, a worker-only process does not. Ignored for other providers.
   */
  hostControl?: boolean;
  /** This process's label in the step timeline (`api`, `worker`). */
  role?: string;
}

/** The step timeline's marks of a commit: when its transaction began and when it committed. */
const markCommits: CommitListener = (notice) => {
  if (notice.outcome !== 'committed') return;
  const now = timelineNow();
  const what = `${notice.event.type} r${notice.revision}`;
  mark(notice.environmentId, `commit began: ${what}`, now - notice.durationMs);
  mark(notice.environmentId, `committed: ${what}`, now);
};

type ClosableProvider = SandboxProvider & { close?(): Promise<void> };

/** The Agent Sandbox adapter's two factories: its provider and its BuildTest runner. */
export interface AgentSandboxFactories {
  createAgentSandbox: typeof CreateAgentSandbox;
  createAgentSandboxBuildTestRunner: typeof CreateAgentSandboxBuildTestRunner;
}

/**
 * The Agent Sandbox adapter, imported only when it is the configured provider: it loads the
 * Kubernetes client, which alone costs about half a second of every start-up (bench/startup.ts), and
 * an embedded or sandbox-host process never calls it.
 */
export async function agentSandboxFactoriesFor(
  config: Pick<Config, 'provider'>,
): Promise<AgentSandboxFactories | undefined> {
  if (config.provider.id !== 'agent-sandbox') return undefined;
  const [provider, runner] = await Promise.all([
    import('../providers/agent-sandbox/create-provider.ts'),
    import('../providers/agent-sandbox/build-test-runner.ts'),
  ]);
  return {
    createAgentSandbox: provider.createAgentSandbox,
    createAgentSandboxBuildTestRunner: runner.createAgentSandboxBuildTestRunner,
  };
}

/** The factories when the configuration names Agent Sandbox; a mistake of the caller otherwise. */
function agentSandboxOf(agentSandbox: AgentSandboxFactories | undefined): AgentSandboxFactories {
  if (agentSandbox === undefined)
    throw new Error('the agent-sandbox provider is configured but its adapter was not loaded');
  return agentSandbox;
}

/**
 * The configured provider, and the network policy verifier that goes with it: on Agent Sandbox the
 * project's CiliumNetworkPolicies read back from the sandbox namespace (settings validated here,
 * naming every bad variable); otherwise the embedded table the admin route writes.
 */
function providerFor(
  config: Config,
  db: Database,
  env: Readonly<Record<string, string | undefined>>,
  agentSandbox: AgentSandboxFactories | undefined,
): {
  provider: ClosableProvider;
  networkPolicies: NetworkPolicyVerifier;
  networkPolicyWriter?: NetworkPolicyWriter;
  workspaceStorage?: WorkspaceStorage;
  sandboxHost?: SandboxHostSettings;
  launchesAgentHost?: boolean;
} {
  if (config.provider.id === 'agent-sandbox') return agentSandboxOf(agentSandbox).createAgentSandbox(env);
  if (config.provider.id === 'sandbox-host') {
    // Throws SandboxHostSettingsError naming every bad SANDLOT_HOST_* variable (never a key).
    const settings = loadSandboxHostSettings(env);
    return {
      provider: new SandboxHostProvider({
        db,
        signer: settings.signer,
        optionsRevision: config.provider.optionsRevision,
      }),
      networkPolicies: new TableNetworkPolicies(db),
      networkPolicyWriter: new TableNetworkPolicyWriter(db),
      sandboxHost: settings,
    };
  }
  return {
    provider: new SimulatedProvider({
      db,
      optionsRevision: config.provider.optionsRevision,
      seed: config.simulated.seed,
      ...(config.simulated.faults === undefined ? {} : { faults: config.simulated.faults }),
    }),
    networkPolicies: new TableNetworkPolicies(db),
    networkPolicyWriter: new TableNetworkPolicyWriter(db),
  };
}

export async function composeSandlot(
  config: Config,
  logger: Logger,
  options: ComposeOptions = {},
): Promise<Sandlot> {
  const db = await openDatabase(config, logger);
  let workers: WorkerHost | null = null;
  let provider: ClosableProvider | null = null;
  let inspection: QueueInspection | null = null;
  let metricsServer: MetricsServer | null = null;
  let controlListener: ControlListener | null = null;
  let changeFeed: ChangeFeed | null = null;
  // One registry per process, and only when something will scrape it.
  const metrics: SandlotMetrics | undefined = config.metrics === undefined ? undefined : createMetrics();
  const measured = metrics === undefined ? {} : { metrics };
  try {
    if (config.migrateOnStart) {
      await migrateFor(db, config, (name) => logger.info({ migration: name }, 'migration applied'));
    }
    const agentSandbox = await agentSandboxFactoriesFor(config);
    const chosen = providerFor(config, db, options.env ?? process.env, agentSandbox);
    provider = chosen.provider;
    const ports = portsFor(config, db);
    const runtime = createEnvironmentRuntime(db);
    if (config.timelineFile !== undefined) {
      enableTimeline(config.timelineFile, options.role ?? (options.workers === false ? 'api' : 'process'));
      runtime.onCommitted(markCommits);
    }
    if (metrics !== undefined) {
      runtime.onCommitted(countCommits(metrics, environmentDefinition.machine.id));
      runtime.onCommitted(timeLeaseSteps(metrics, db));
    }
    runtime.onCommitted(
      reportWorkspaceConflicts(logger, metrics && (() => metrics.workspaceConflicts.inc())),
    );
    const { networkPolicies, networkPolicyWriter, workspaceStorage } = chosen;
    const runtimeCore = runtimeCoreFor(config, db);
    const runtimeEvents = runtimeEventsFor(config, db);
    const buildTestOffer = buildTestFor(config, db, options.env ?? process.env, agentSandbox);
    const workerDeps = {
      db,
      runtime,
      provider,
      logger,
      networkPolicies,
      ...ports,
      ...measured,
      ...buildTestWorkerFor(buildTestOffer.buildTest, config),
    };
    const runner = attemptRunner(runnerDeps(workerDeps, config.workers.callTimeoutMs));
    const services = createServices({
      db,
      runtime,
      runner,
      provider,
      networkPolicies,
      ...ports,
      ...(config.leaseTtlMs === undefined ? {} : { leaseTtlMs: config.leaseTtlMs }),
      agentHost: agentHostFor(config, db, chosen.launchesAgentHost === true),
      ...(workspaceStorage === undefined ? {} : { workspaceStorage }),
      ...(config.agentHostProfiles === undefined ? {} : { agentHostProfiles: config.agentHostProfiles }),
      ...buildTestOffer,
      ...(runtimeCore === undefined ? {} : { runtimeCore }),
      ...(runtimeEvents === undefined ? {} : { runtimeEvents }),
      ...(networkPolicyWriter === undefined ? {} : { networkPolicyWriter }),
      ...(metrics === undefined ? {} : { onReady: timeFirstReady(metrics, db) }),
    });
    // An API-only process with Redis still publishes its effects at once; without Redis the worker
    // processes' relays find them in PostgreSQL.
    if (options.workers !== false || config.redisUrl !== undefined) {
      workers = await startWorkers(workerDeps, {
        ...(config.redisUrl === undefined ? {} : { redisUrl: config.redisUrl }),
        ...(config.workers.concurrency === undefined ? {} : { concurrency: config.workers.concurrency }),
        callTimeoutMs: config.workers.callTimeoutMs,
        reconcileEveryMs: config.workers.reconcileEveryMs,
        observeEveryMs: config.workers.observeEveryMs,
        observeResyncMs: config.workers.observeResyncMs,
        backoffMaxMs: config.workers.backoffMaxMs,
        pruneEveryMs: config.workers.pruneEveryMs,
        retentionDays: config.workers.retentionDays,
        queueLockMs: config.workers.queueLockMs,
        prefix: config.workers.prefix,
        processEffects: options.workers !== false,
      });
    }
    // The dashboard and the queue gauges read BullMQ through their own handles (absent without Redis).
    if (config.redisUrl !== undefined)
      inspection = inspectQueues(config.redisUrl, config.workers.prefix, logger);
    // Long-poll reads here wake at other processes' commits, not at the next tick of the shared read.
    if (config.redisUrl !== undefined) {
      changeFeed = await startChangeFeed({
        redis: config.redisUrl,
        prefix: config.workers.prefix,
        runtime,
        onChange: (environmentId, revision) => services.changes.announce(environmentId, revision),
        logger,
      });
    }
    const app = createApp({
      db,
      services,
      verifier: await verifierFor(config),
      logger,
      provider: provider.identity,
      embedded: config.mode === 'embedded',
      ...measured,
      ...(inspection === null ? {} : { queues: inspection.queues }),
    });
    if (metrics !== undefined && config.metrics !== undefined) {
      metrics.readStateFrom(stateSources(db, queueJobsOf(inspection, workers)));
      metricsServer = await startMetricsServer({
        registry: metrics.registry,
        ...config.metrics,
        onError: (error) => logger.warn({ err: error }, 'metrics scrape failed'),
      });
      logger.info({ url: metricsServer.url }, 'metrics listening');
    }
    if (chosen.sandboxHost !== undefined && options.hostControl === true) {
      await warnOnTrustMismatch(db, chosen.sandboxHost, logger);
      const { listen, certPem, keyPem, clientCaPem } = chosen.sandboxHost;
      controlListener = await startControlListener({
        ...listen,
        certPem,
        keyPem,
        clientCaPem,
        directory: createPgHostCertificateDirectory(db),
        handlers: controlHandlersFor(db),
        logger,
      });
      logger.info({ host: listen.host, port: controlListener.port }, 'host control listening');
    }
    const held = provider;
    const listener = metricsServer;
    const control = controlListener;
    const queues = inspection;
    const feed = changeFeed;
    let closing: Promise<void> | undefined;
    return {
      db,
      app,
      services,
      provider: held,
      workers,
      runtime,
      metricsUrl: listener?.url ?? null,
      hostControl:
        control === null || chosen.sandboxHost === undefined
          ? null
          : { host: chosen.sandboxHost.listen.host, port: control.port },
      // Once, whoever asks (the shutdown handler and a test may both).
      close() {
        closing ??= (async () => {
          await control?.close();
          await listener?.close();
          await workers?.close();
          await queues?.close();
          await feed?.close();
          await held.close?.();
          await db.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    await controlListener?.close().catch(() => undefined);
    await metricsServer?.close().catch(() => undefined);
    await inspection?.close().catch(() => undefined);
    await changeFeed?.close().catch(() => undefined);
    await workers?.close().catch(() => undefined);
    await provider?.close?.().catch(() => undefined);
    await db.close();
    throw error;
  }
}

/**
 * The provider signs envelopes with the configured key, which hosts accept only if it is the
 * persisted trust's current (or next) key: a mismatch is said once at start, without the key.
 */
async function warnOnTrustMismatch(db: Database, settings: SandboxHostSettings, logger: Logger) {
  const trust = await loadTrust(db);
  const { version, privateKey } = settings.signer;
  if (trust === null) {
    logger.warn('no control verification trust is set yet: run `sandlot hosts trust` before issuing');
    return;
  }
  const key = [trust.current, trust.next].find((k) => k?.version === version);
  if (key === undefined || key === null || !key.publicKey.equals(createPublicKey(privateKey))) {
    logger.warn(
      { signingKeyVersion: version, currentVersion: trust.current.version },
      'SANDLOT_HOST_SIGNING_KEY_FILE/VERSION is not a key of the persisted control trust: hosts will refuse its envelopes',
    );
  }
}

/** Queue depth for the gauge: BullMQ's counts with Redis, the embedded queue's own otherwise. */
function queueJobsOf(inspection: QueueInspection | null, workers: WorkerHost | null) {
  if (inspection !== null) return () => inspection.jobCounts();
  const queue = workers?.queue;
  if (queue instanceof InProcessEffectQueue) return () => Promise.resolve(inProcessJobCounts(queue));
  return undefined;
}

/**
 * BuildTest is offered only with an AcceptedBuildTestProfile, and then asks Core: the HTTP adapter at
 * the configured SANDLOT_CORE_URL in production (required there with a profile), the embedded
 * stand-in's tables in embedded mode. Without a profile no Core is composed at all. The runner is
 * the provider's own command and collector Pods (buildTestRunnerOffered): the simulated provider's
 * rows, or Agent Sandbox's Pods in the adapter's namespace through the same Kubernetes settings.
 */
export function buildTestFor(
  config: Config,
  db: Database,
  env: Readonly<Record<string, string | undefined>> = process.env,
  agentSandbox?: AgentSandboxFactories,
): { buildTest?: BuildTestOffer } {
  const loaded = config.buildTestProfile;
  if (loaded === undefined) return {};
  const profile = { ...loaded.profile, hash: loaded.hash };
  const runner = !buildTestRunnerOffered(config.provider.id)
    ? undefined
    : config.provider.id === 'agent-sandbox'
      ? agentSandboxOf(agentSandbox).createAgentSandboxBuildTestRunner(env)
      : new SimulatedBuildTestRunner({ db });
  const withRunner = runner === undefined ? {} : { runner };
  if (config.mode === 'embedded') {
    return { buildTest: { profile, core: new EmbeddedCore(db), ...withRunner } };
  }
  if (config.coreUrl === undefined)
    throw new Error('SANDLOT_CORE_URL is required in production mode with a BuildTest profile');
  // Start-up refused a production runner without a Core credential for its workers; this is the
  // same rule, for a Config built some other way.
  if (runner !== undefined && config.coreToken === undefined)
    throw new Error('SANDLOT_CORE_TOKEN_FILE is required in production mode with a BuildTest runner');
  return {
    buildTest: {
      profile,
      core: new HttpCore({ baseUrl: config.coreUrl, ...servicePin(config) }),
      ...withRunner,
    },
  };
}

/**
 * Core's suspend/resume side: the embedded stand-in's tables in embedded mode, the HTTP adapter at
 * SANDLOT_CORE_URL in production, and none in production without one (suspend and resume then
 * answer 503: Environment never decides them alone).
 */
/** Events' protected material read: the stand-in when embedded, Events' route when configured. */
function runtimeEventsFor(config: Config, db: Database): RuntimeEvents | undefined {
  if (config.mode === 'embedded') return new EmbeddedRuntimeEvents(db);
  return config.eventsUrl === undefined
    ? undefined
    : new HttpRuntimeEvents({ baseUrl: config.eventsUrl, ...servicePin(config) });
}

function runtimeCoreFor(config: Config, db: Database): RuntimeCore | undefined {
  if (config.mode === 'embedded') return new EmbeddedRuntimeCore(db);
  return config.coreUrl === undefined
    ? undefined
    : new HttpRuntimeCore({ baseUrl: config.coreUrl, ...servicePin(config) });
}

/** Who a worker is to Core: not a caller, so no caller's subject. */
const WORKER_SUBJECT = 'sandlot-worker';

/**
 * The worker side of an offer with a runner: the same runner and Core. A worker keeps no caller's
 * bearer, so it asks Core as itself. In embedded mode the stand-in Core authorizes by tenant and
 * needs no bearer; in production the worker presents Environment's own token
 * (SANDLOT_CORE_TOKEN_FILE), read again whenever the file changed, expiring at its JWT `exp` (or in
 * five minutes if it is not a JWT). The CoreActor is made by coreActorOf, so it prints and
 * serializes without the token.
 */
export function buildTestWorkerFor(
  offer: BuildTestOffer | undefined,
  config: Pick<Config, 'mode' | 'coreToken'>,
): { buildTest?: BuildTestWorkerDeps } {
  if (offer?.runner === undefined) return {};
  const { runner, core } = offer;
  const { coreToken } = config;
  const workerActor = (tenantId: string): CoreActor => {
    const caller = { tenantId, subject: WORKER_SUBJECT };
    const now = new Date();
    if (config.mode === 'embedded' || coreToken === undefined) {
      return coreActorOf({
        caller,
        bearer: { expiresAt: new Date(now.getTime() + 60_000), reveal: () => '' },
      });
    }
    // One read per actor: the token and its expiry belong together.
    const token = coreToken.read();
    return coreActorOf({ caller, bearer: { expiresAt: coreTokenExpiry(token, now), reveal: () => token } });
  };
  // No profile: a step runs under the profile its lease recorded when it was reserved.
  return { buildTest: { runner, core, workerActor } };
}

/**
 * Who answers for a sandbox's AgentHost: the HTTPS client (Pod IP, TLS for the Service name against
 * the configured `service-backend-ca`) for Agent Sandbox; the embedded stand-in for the simulated
 * provider. Agent Sandbox with a launch profile (or receiver profiles) and no trust root is refused
 * at start, as loadConfig refuses it (a Host nobody can ask would leave every lease unready); on the
 * legacy template, which runs no Host, it gets one that never answers.
 */
function agentHostFor(config: Config, db: Database, launchesAgentHost: boolean): AgentHost {
  if (config.provider.id === 'sandbox-host') {
    return new UnreachableAgentHost(
      'the sandbox-host provider offers no AgentHost (the reference host runs none)',
    );
  }
  if (config.provider.id !== 'agent-sandbox') return new EmbeddedAgentHost({ db });
  if (config.agentHostCaPem === undefined && (launchesAgentHost || config.agentHostProfiles !== undefined)) {
    throw new Error(
      'SANDLOT_AGENTHOST_CA_FILE is required with the agent-sandbox provider and an AgentHost profile: without the service-backend-ca roots no AgentHost can be reached',
    );
  }
  if (config.agentHostCaPem === undefined) {
    return new UnreachableAgentHost(
      'no AgentHost trust root is configured (SANDLOT_AGENTHOST_CA_FILE), so no Host can be asked',
    );
  }
  return new HttpsAgentHost({ caPem: config.agentHostCaPem });
}
