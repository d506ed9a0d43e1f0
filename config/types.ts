import type { FaultPlan } from '../providers/simulated/fault-plan.ts';
import type { AgentHostConfiguration } from './agenthost.ts';
import type { LoadedBuildTestProfile } from './build-test-profile.ts';
import type { CoreTokenSource } from './core-token.ts';
// Sandlot's configuration after validation. Every field is resolved (defaults applied); optional
// keys are absent, never undefined, so spreading a Config never overwrites with undefined.

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Asymmetric algorithms only: HS256 is reserved for embedded mode's dev key. */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384', 'EdDSA'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

export const PROVIDERS = ['simulated', 'agent-sandbox', 'sandbox-host'] as const;
export type ProviderId = (typeof PROVIDERS)[number];

/** `embedded`: PGlite, built-in Projects and run selection, HS256 dev tokens. `production`: PostgreSQL. */
export type Mode = 'embedded' | 'production';

export interface AuthConfig {
  issuer: string;
  audience: string;
  jwksUrl?: string;
  /** Accepted for tokens verified against jwksUrl; embedded mode's dev key is always HS256. */
  algorithms: JwtAlgorithm[];
}

export interface Config {
  mode: Mode;
  host: string;
  port: number;
  /** As given; the caller resolves it against process.cwd(). */
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  migrateOnStart: boolean;
  logLevel: LogLevel;
  auth: AuthConfig;
  /** External Projects service; production only. */
  projectsUrl?: string;
  /** External run-selection service; production only. */
  runSelectionUrl?: string;
  provider: { id: ProviderId; optionsRevision: string };
  /** How long a lease lasts from reservation (unset: it does not expire). Expiry never releases. */
  leaseTtlMs?: number;
  /** The immutable AgentHost receiver and source runtime profiles (SANDLOT_AGENTHOST_CONFIG_FILE). */
  agentHostProfiles?: AgentHostConfiguration;
  /** PEM roots of `service-backend-ca`, which an AgentHost's certificate must chain to. */
  agentHostCaPem?: string;
  /**
   * PEM roots of `service-backend-ca` the internal services' certificates (Core, Events, Projects,
   * run selection) must chain to (SANDLOT_SERVICE_BACKEND_CA_FILE); absent: the system trust store.
   */
  serviceBackendCaPem?: string;
  /** The AcceptedBuildTestProfile (SANDLOT_BUILDTEST_PROFILE_FILE); absent: BuildTest is not offered. */
  buildTestProfile?: LoadedBuildTestProfile;
  /** Core's BuildTest base URL; production only (embedded mode stands in for Core itself). */
  coreUrl?: string;
  /** Environment's own Core bearer, for workers (SANDLOT_CORE_TOKEN_FILE); production only. */
  coreToken?: CoreTokenSource;
  /** Events' base URL for protected material (SANDLOT_EVENTS_URL); production only (embedded stands in). */
  eventsUrl?: string;
  simulated: { seed: number; faults?: FaultPlan };
  /** Append the step timeline here (SANDLOT_TIMELINE_FILE, lib/timeline.ts; unset: off). */
  timelineFile?: string;
  /** Where GET /metrics listens, apart from the API (SANDLOT_METRICS_PORT; unset: no listener). */
  metrics?: { host: string; port: number };
  /** Where `sandlot worker` answers /healthz and /readyz (SANDLOT_WORKER_HEALTH_PORT; unset or 0: none). */
  workerHealth?: { host: string; port: number };
  workers: {
    concurrency?: number;
    callTimeoutMs: number;
    reconcileEveryMs: number;
    observeEveryMs: number;
    /** With a provider change feed: the longest a lease goes undescribed by the observer's pass. */
    observeResyncMs: number;
    /** The longest a lease waits between listings or describes that keep failing (store/backoff.ts). */
    backoffMaxMs: number;
    /** Period of the pruner (workers/pruner.ts). */
    pruneEveryMs: number;
    /** Days a Released Environment's journal is kept whole before it is compacted. */
    retentionDays: number;
    /** BullMQ job lock (and stall check) period: how soon a dead process's jobs run again. */
    queueLockMs: number;
    prefix: string;
  };
}

/**
 * What the provider report route (POST /internal/provider-lifecycle/reports) needs before it may
 * accept anything: a way to authenticate the provider's identity, and Core's acknowledgement of the
 * interruption command. Neither exists yet, so neither is settable: no variable reads them, and the
 * route answers 503 `provider-reports-unavailable` whatever it is sent.
 */
export interface ProviderReportsAdmission {
  identityAuthentication: null;
  coreInterruptionAck: null;
}

export const providerReportsAdmission: ProviderReportsAdmission = {
  identityAuthentication: null,
  coreInterruptionAck: null,
};
