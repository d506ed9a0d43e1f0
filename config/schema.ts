import { parseFaultPlan } from '../providers/simulated/fault-plan.ts';
// The environment variables Sandlot reads, validated in one pass so that every problem is reported
// together. DATABASE_URL decides the mode: unset runs embedded (PGlite, built-in Projects and run
// selection, HS256 dev tokens); set runs production, which needs the external services below.

import { z } from 'zod';
import { JWT_ALGORITHMS, LOG_LEVELS, PROVIDERS, type Config, type JwtAlgorithm } from './types.ts';
import { agentHostCaFile, agentHostConfigFile, serviceBackendCaFile } from './agenthost.ts';
import { buildTestProfileFile, buildTestRunnerOffered } from './build-test-profile.ts';
import { coreTokenFile, coreTokenFileProblem } from './core-token.ts';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
const BOOLEANS = new Map([
  ['true', true],
  ['1', true],
  ['false', false],
  ['0', false],
]);
const PRODUCTION_REQUIRED = [
  'SANDLOT_JWT_ISSUER',
  'SANDLOT_JWKS_URL',
  'SANDLOT_PROJECTS_URL',
  'SANDLOT_RUN_SELECTION_URL',
] as const;

function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

function url(accept: (url: URL) => boolean, error: string) {
  return z.string().refine((value) => {
    const parsed = parseUrl(value);
    return parsed !== undefined && accept(parsed);
  }, error);
}

const isHttp = (u: URL): boolean => u.protocol === 'https:' || u.protocol === 'http:';
const HTTP_URL_ERROR = 'expected an http:// or https:// URL';

// Keys are fetched over it, so plain http would let anyone on the path mint valid tokens.
const jwksUrl = url(
  (u) => u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK_HOSTS.has(u.hostname)),
  'expected an https:// URL (http:// only for 127.0.0.1, localhost or ::1)',
);

const algorithms = z.string().transform((value, ctx): JwtAlgorithm[] => {
  const names = [...new Set(value.split(',').map((name) => name.trim()))].filter((name) => name !== '');
  const known = names.filter((name): name is JwtAlgorithm =>
    (JWT_ALGORITHMS as readonly string[]).includes(name),
  );
  const unknown = names.filter((name) => !known.includes(name as JwtAlgorithm));
  if (names.length === 0 || unknown.length > 0) {
    const hmac = unknown.some((name) => name.startsWith('HS'));
    ctx.issues.push({
      code: 'custom',
      input: value,
      message:
        (unknown.length > 0 ? `unsupported ${unknown.join(', ')}: ` : '') +
        `expected a comma-separated list of ${JWT_ALGORITHMS.join(', ')}` +
        (hmac ? " (HS* is reserved for embedded mode's dev key)" : ''),
    });
  }
  return known;
});

const envObject = z.object({
  DATABASE_URL: url(
    (u) => u.protocol === 'postgres:' || u.protocol === 'postgresql:',
    'expected a postgres:// or postgresql:// URL',
  ).optional(),
  REDIS_URL: url(
    (u) => u.protocol === 'redis:' || u.protocol === 'rediss:',
    'expected a redis:// or rediss:// URL',
  ).optional(),
  HOST: z.string().regex(/^\S+$/, 'expected a host name or address without spaces').optional(),
  PORT: z
    .string()
    .refine((value) => /^\d{1,5}$/.test(value) && +value >= 1 && +value <= 65535, {
      error: 'expected an integer between 1 and 65535',
    })
    .transform(Number)
    .default(8080),
  SANDLOT_DATA_DIR: z.string().default('.sandlot'),
  // Not z.stringbool: its failure aborts the whole object and would hide the production check.
  SANDLOT_MIGRATE_ON_START: z
    .string()
    .refine((value) => BOOLEANS.has(value.toLowerCase()), 'expected true, false, 1 or 0')
    .transform((value) => BOOLEANS.get(value.toLowerCase()) === true)
    .default(true),
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: `expected one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  SANDLOT_JWT_ISSUER: z.string().optional(),
  SANDLOT_JWT_AUDIENCE: z.string().default('sandlot'),
  SANDLOT_JWKS_URL: jwksUrl.optional(),
  SANDLOT_JWT_ALGORITHMS: algorithms.default(['RS256', 'ES256']),
  // Validated only in production (below): embedded mode serves these itself and ignores them.
  SANDLOT_PROJECTS_URL: z.string().optional(),
  SANDLOT_RUN_SELECTION_URL: z.string().optional(),
  SANDLOT_PROVIDER: z
    .enum(PROVIDERS, { error: `expected one of ${PROVIDERS.join(', ')}` })
    .default('simulated'),
  SANDLOT_PROVIDER_OPTIONS_REVISION: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected 1 to 64 characters of A-Z, a-z, 0-9, ".", "_" or "-"')
    .default('1'),
  SANDLOT_SIMULATED_FAULTS: z
    .string()
    .refine((v) => {
      try {
        parseFaultPlan(v);
        return true;
      } catch {
        return false;
      }
    }, 'expected a JSON fault plan (see docs/operations.md)')
    .optional(),
  SANDLOT_SIMULATED_SEED: z.coerce.number().int('expected an integer seed').default(1),
  SANDLOT_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(256).optional(),
  SANDLOT_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  /** Lease time to live from reservation; unset: leases do not expire. */
  SANDLOT_LEASE_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(30 * 24 * 3_600_000)
    .optional(),
  SANDLOT_RECONCILE_EVERY_MS: z.coerce.number().int().min(100).max(3_600_000).default(5_000),
  SANDLOT_OBSERVE_EVERY_MS: z.coerce.number().int().min(100).max(3_600_000).default(15_000),
  SANDLOT_OBSERVE_RESYNC_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(300_000),
  SANDLOT_RECONCILE_BACKOFF_MAX_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  SANDLOT_TIMELINE_FILE: z.string().min(1).optional(),
  SANDLOT_PRUNE_EVERY_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(600_000),
  SANDLOT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  SANDLOT_QUEUE_LOCK_MS: z.coerce.number().int().min(500).max(600_000).default(5_000),
  SANDLOT_BULLMQ_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,32}$/, 'expected 1 to 32 characters of A-Z, a-z, 0-9, "_" or "-"')
    .default('sandlot'),
  // Read and validated here, at start; absent: the runtime profile resolve answers 409.
  SANDLOT_AGENTHOST_CONFIG_FILE: agentHostConfigFile.optional(),
  SANDLOT_AGENTHOST_CA_FILE: agentHostCaFile.optional(),
  // The Agent Sandbox launch profile's names: validated by providers/agent-sandbox/options.ts; read
  // here only so that a profile without SANDLOT_AGENTHOST_CA_FILE is refused with the rest (below).
  SANDLOT_AGENT_SANDBOX_AGENT_HOST_CONFIG_MAP_NAME: z.string().optional(),
  SANDLOT_AGENT_SANDBOX_AGENT_HOST_TLS_SECRET_NAME: z.string().optional(),
  // The internal services' CA (Core, Events, Projects, run selection), read and checked at start;
  // absent: those clients verify against the system trust store.
  SANDLOT_SERVICE_BACKEND_CA_FILE: serviceBackendCaFile.optional(),
  // Read and validated here, at start; absent: BuildTest is not offered (409 build-test-unavailable).
  SANDLOT_BUILDTEST_PROFILE_FILE: buildTestProfileFile.optional(),
  // Validated only in production, and required there with a BuildTest profile (below).
  SANDLOT_CORE_URL: z.string().optional(),
  // The path of Environment's own Core bearer for workers; read and checked in production only (below).
  SANDLOT_CORE_TOKEN_FILE: z.string().optional(),
  // Events' protected material route (resume bootstrap); validated only in production (below).
  SANDLOT_EVENTS_URL: z.string().optional(),
  // Prometheus /metrics on its own listener; unset: no listener (0: any free port, for tests).
  SANDLOT_METRICS_PORT: z
    .string()
    .refine((value) => /^\d{1,5}$/.test(value) && +value <= 65535, {
      error: 'expected an integer between 0 and 65535',
    })
    .transform(Number)
    .optional(),
  SANDLOT_METRICS_HOST: z
    .string()
    .regex(/^\S+$/, 'expected a host name or address without spaces')
    .default('127.0.0.1'),
  // `sandlot worker`'s probe listener (/healthz, /readyz); unset or 0: no listener. The Kubernetes
  // worker Deployment sets both (host 0.0.0.0, so the kubelet reaches the Pod IP).
  SANDLOT_WORKER_HEALTH_PORT: z
    .string()
    .refine((value) => /^\d{1,5}$/.test(value) && +value <= 65535, {
      error: 'expected an integer between 0 and 65535',
    })
    .transform(Number)
    .optional(),
  SANDLOT_WORKER_HEALTH_HOST: z
    .string()
    .regex(/^\S+$/, 'expected a host name or address without spaces')
    .default('127.0.0.1'),
});

type Env = z.output<typeof envObject>;

/**
 * An AgentHost on Agent Sandbox is reached over HTTPS verified against the service-backend-ca
 * roots: with a launch profile (or receiver profiles) and no roots, no Host could ever be asked, so
 * start is refused rather than composing a Host that never answers.
 */
function requireAgentHostTrust(env: Env, ctx: z.RefinementCtx<Env>): void {
  if (env.SANDLOT_PROVIDER !== 'agent-sandbox' || env.SANDLOT_AGENTHOST_CA_FILE !== undefined) return;
  const wanting = [
    'SANDLOT_AGENT_SANDBOX_AGENT_HOST_CONFIG_MAP_NAME',
    'SANDLOT_AGENT_SANDBOX_AGENT_HOST_TLS_SECRET_NAME',
    'SANDLOT_AGENTHOST_CONFIG_FILE',
  ] as const;
  const set = wanting.filter((variable) => env[variable] !== undefined);
  if (set.length === 0) return;
  ctx.addIssue({
    code: 'custom',
    path: ['SANDLOT_AGENTHOST_CA_FILE'],
    message: `required with the agent-sandbox provider when ${set.join(' or ')} is set: without the service-backend-ca roots no AgentHost can be reached`,
  });
}

function requireProductionServices(env: Env, ctx: z.RefinementCtx<Env>): void {
  if (env.DATABASE_URL === undefined) return;
  for (const variable of PRODUCTION_REQUIRED) {
    if (env[variable] === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [variable],
        message: 'required in production (DATABASE_URL is set)',
      });
    }
  }
  if (env.SANDLOT_BUILDTEST_PROFILE_FILE !== undefined && env.SANDLOT_CORE_URL === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['SANDLOT_CORE_URL'],
      message: 'required in production when SANDLOT_BUILDTEST_PROFILE_FILE is set',
    });
  }
  // A worker that runs BuildTest steps asks Core with no caller behind it: it needs a bearer of its own.
  const tokenFile = env.SANDLOT_CORE_TOKEN_FILE;
  if (
    env.SANDLOT_BUILDTEST_PROFILE_FILE !== undefined &&
    buildTestRunnerOffered(env.SANDLOT_PROVIDER) &&
    tokenFile === undefined
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['SANDLOT_CORE_TOKEN_FILE'],
      message: `required in production when SANDLOT_BUILDTEST_PROFILE_FILE is set and the ${env.SANDLOT_PROVIDER} provider runs BuildTest steps`,
    });
  }
  // The message names the path; the variable's value is never shown (its name says TOKEN).
  const tokenProblem = tokenFile === undefined ? undefined : coreTokenFileProblem(tokenFile);
  if (tokenProblem !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['SANDLOT_CORE_TOKEN_FILE'], message: tokenProblem });
  }
  // Core and Events receive actors' bearers: https, or plain http on loopback only; never credentials.
  for (const variable of ['SANDLOT_CORE_URL', 'SANDLOT_EVENTS_URL'] as const) {
    const value = env[variable];
    const url = value === undefined ? undefined : parseUrl(value);
    if (
      value !== undefined &&
      (url === undefined ||
        !(url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) ||
        url.username !== '' ||
        url.password !== '' ||
        url.search !== '' ||
        url.hash !== '')
    ) {
      ctx.addIssue({
        code: 'custom',
        path: [variable],
        message:
          'expected an https:// URL without credentials, query or fragment (http:// only for 127.0.0.1, localhost or ::1)',
      });
    }
  }
  for (const variable of ['SANDLOT_PROJECTS_URL', 'SANDLOT_RUN_SELECTION_URL'] as const) {
    const value = env[variable];
    const parsed = value === undefined ? undefined : parseUrl(value);
    if (value !== undefined && (parsed === undefined || !isHttp(parsed))) {
      ctx.addIssue({ code: 'custom', path: [variable], message: HTTP_URL_ERROR });
    }
  }
}

function toConfig(env: Env): Config {
  const production = env.DATABASE_URL !== undefined;
  const { SANDLOT_JWKS_URL: jwks, REDIS_URL: redis } = env;
  return {
    mode: production ? 'production' : 'embedded',
    host: env.HOST ?? (production ? '0.0.0.0' : '127.0.0.1'),
    port: env.PORT,
    dataDir: env.SANDLOT_DATA_DIR,
    ...(env.DATABASE_URL === undefined ? {} : { databaseUrl: env.DATABASE_URL }),
    ...(redis === undefined ? {} : { redisUrl: redis }),
    migrateOnStart: env.SANDLOT_MIGRATE_ON_START,
    logLevel: env.LOG_LEVEL,
    auth: {
      // Production has an issuer by now: requireProductionServices refused its absence.
      issuer: env.SANDLOT_JWT_ISSUER ?? 'sandlot-embedded',
      audience: env.SANDLOT_JWT_AUDIENCE,
      ...(jwks === undefined ? {} : { jwksUrl: jwks }),
      algorithms: env.SANDLOT_JWT_ALGORITHMS,
    },
    ...(production && env.SANDLOT_PROJECTS_URL !== undefined
      ? { projectsUrl: env.SANDLOT_PROJECTS_URL }
      : {}),
    ...(production && env.SANDLOT_RUN_SELECTION_URL !== undefined
      ? { runSelectionUrl: env.SANDLOT_RUN_SELECTION_URL }
      : {}),
    provider: { id: env.SANDLOT_PROVIDER, optionsRevision: env.SANDLOT_PROVIDER_OPTIONS_REVISION },
    ...(env.SANDLOT_LEASE_TTL_MS === undefined ? {} : { leaseTtlMs: env.SANDLOT_LEASE_TTL_MS }),
    ...(env.SANDLOT_AGENTHOST_CONFIG_FILE === undefined
      ? {}
      : { agentHostProfiles: env.SANDLOT_AGENTHOST_CONFIG_FILE }),
    ...(env.SANDLOT_AGENTHOST_CA_FILE === undefined ? {} : { agentHostCaPem: env.SANDLOT_AGENTHOST_CA_FILE }),
    ...(env.SANDLOT_SERVICE_BACKEND_CA_FILE === undefined
      ? {}
      : { serviceBackendCaPem: env.SANDLOT_SERVICE_BACKEND_CA_FILE }),
    ...(env.SANDLOT_BUILDTEST_PROFILE_FILE === undefined
      ? {}
      : { buildTestProfile: env.SANDLOT_BUILDTEST_PROFILE_FILE }),
    ...(production && env.SANDLOT_CORE_URL !== undefined ? { coreUrl: env.SANDLOT_CORE_URL } : {}),
    ...(production && env.SANDLOT_EVENTS_URL !== undefined ? { eventsUrl: env.SANDLOT_EVENTS_URL } : {}),
    // Checked above; read again on each use (a rotated token is picked up without a restart).
    ...(production && env.SANDLOT_CORE_TOKEN_FILE !== undefined
      ? { coreToken: coreTokenFile(env.SANDLOT_CORE_TOKEN_FILE) }
      : {}),
    ...(env.SANDLOT_TIMELINE_FILE === undefined ? {} : { timelineFile: env.SANDLOT_TIMELINE_FILE }),
    ...(env.SANDLOT_METRICS_PORT === undefined
      ? {}
      : { metrics: { host: env.SANDLOT_METRICS_HOST, port: env.SANDLOT_METRICS_PORT } }),
    ...(env.SANDLOT_WORKER_HEALTH_PORT === undefined || env.SANDLOT_WORKER_HEALTH_PORT === 0
      ? {}
      : { workerHealth: { host: env.SANDLOT_WORKER_HEALTH_HOST, port: env.SANDLOT_WORKER_HEALTH_PORT } }),
    simulated: {
      seed: env.SANDLOT_SIMULATED_SEED,
      ...(env.SANDLOT_SIMULATED_FAULTS === undefined
        ? {}
        : { faults: parseFaultPlan(env.SANDLOT_SIMULATED_FAULTS) }),
    },
    workers: {
      ...(env.SANDLOT_WORKER_CONCURRENCY === undefined
        ? {}
        : { concurrency: env.SANDLOT_WORKER_CONCURRENCY }),
      callTimeoutMs: env.SANDLOT_CALL_TIMEOUT_MS,
      reconcileEveryMs: env.SANDLOT_RECONCILE_EVERY_MS,
      observeEveryMs: env.SANDLOT_OBSERVE_EVERY_MS,
      observeResyncMs: env.SANDLOT_OBSERVE_RESYNC_MS,
      backoffMaxMs: env.SANDLOT_RECONCILE_BACKOFF_MAX_MS,
      pruneEveryMs: env.SANDLOT_PRUNE_EVERY_MS,
      retentionDays: env.SANDLOT_RETENTION_DAYS,
      queueLockMs: env.SANDLOT_QUEUE_LOCK_MS,
      prefix: env.SANDLOT_BULLMQ_PREFIX,
    },
  };
}

/** Blank values count as unset, as they do in most .env tooling; surrounding spaces are dropped. */
function withoutBlanks(input: unknown): unknown {
  if (typeof input !== 'object' || input === null) return input;
  return Object.fromEntries(
    Object.entries(input).flatMap(([name, value]: [string, unknown]) => {
      const trimmed = typeof value === 'string' ? value.trim() : value;
      return trimmed === '' || trimmed === undefined ? [] : [[name, trimmed]];
    }),
  );
}

export const envSchema = z.preprocess(
  withoutBlanks,
  envObject
    // Runs even when a field failed, so one message lists the missing services alongside bad values.
    .superRefine(requireProductionServices, { when: (payload) => typeof payload.value === 'object' })
    .superRefine(requireAgentHostTrust, { when: (payload) => typeof payload.value === 'object' })
    .transform(toConfig),
);
