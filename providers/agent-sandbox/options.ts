// The Agent Sandbox adapter's settings, read from environment variables and validated in one pass so
// one message names every bad variable. Values here are this process's configuration; a lease uses
// the snapshot frozen at its reservation (options-snapshot.ts), never these, for recovery.
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { connectionOf, type KubernetesConnection } from './connection-settings.ts';
import { isDnsLabel } from './names.ts';
import { CPU_BOUNDS, cpuCores, MEMORY_BOUNDS, memoryBytes } from './quantity.ts';

export const ENV_PREFIX = 'SANDLOT_AGENT_SANDBOX_';
export const SUPPORTED_STORAGE_PROVIDERS = ['azure-files-csi'] as const;
export const SUPPORTED_PLATFORMS = ['linux/amd64'] as const;

export type { KubernetesConnection } from './connection-settings.ts';

export interface AgentSandboxOptions {
  optionsSchemaVersion: 2;
  optionsRevision: string;
  namespace: string;
  workspaceStorageProviderId: (typeof SUPPORTED_STORAGE_PROVIDERS)[number];
  containerImage: string;
  containerImagePlatform: (typeof SUPPORTED_PLATFORMS)[number];
  containerImageCompressedPullBytes: number;
  runtimeClassName: string;
  expectedRuntimeHandler: string;
  cpuRequest: string;
  memoryRequest: string;
  reconciliationTimeoutSeconds: number;
  pollIntervalMilliseconds: number;
  /**
   * How far past a lease's expiry the claim's `spec.lifecycle.shutdownTime` lies. Sandlot never
   * releases a sandbox because its lease expired: the cluster-side shutdown time is only a backstop
   * that removes a sandbox whose control plane is gone, long after the lease's expiry.
   */
  shutdownGraceSeconds: number;
  /**
   * The longest the API server may still act on a request after it arrived (kube-apiserver's
   * `--request-timeout`, 60 s by default): a create whose answer we never saw can no longer land
   * once its call deadline plus this has passed. Not part of the lease's options snapshot.
   */
  apiServerRequestTimeoutSeconds: number;
  /** The optional AgentHost launch profile; absent, the template is the legacy one. */
  agentHost?: AgentHostProfile;
  connection: KubernetesConnection;
}

/** Only trusted names are pinned; everything else the profile adds is fixed by the adapter. */
export interface AgentHostProfile {
  configMapName: string;
  tlsSecretName: string;
}

export const DEFAULT_SHUTDOWN_GRACE_SECONDS = 86_400;
export const SHUTDOWN_GRACE_BOUNDS = { min: 3_600, max: 2_592_000 } as const;

export interface OptionsProblem {
  variable: string;
  reason: string;
}

export class AgentSandboxOptionsError extends Error {
  override readonly name = 'AgentSandboxOptionsError';
  readonly code = 'AGENT_SANDBOX_OPTIONS_INVALID';
  constructor(readonly problems: readonly OptionsProblem[]) {
    super(
      ['Invalid Agent Sandbox settings:', ...problems.map((p) => `  - ${p.variable}: ${p.reason}`)].join(
        '\n',
      ),
    );
  }
}

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]{1,16}$/, `expected an integer between ${min} and ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `expected an integer between ${min} and ${max}`);

const dnsLabel = z.string().refine(isDnsLabel, 'expected a DNS label (1-63 of a-z, 0-9, "-")');
const quantity = (
  parse: (text: string) => number | undefined,
  bounds: { min: number; max: number },
  what: string,
) =>
  z.string().refine((text) => {
    const value = parse(text);
    return value !== undefined && value >= bounds.min && value <= bounds.max;
  }, `expected a ${what}`);

// The image must name exactly one immutable build: a registry path plus a sha256 digest, no tag.
const IMAGE = /^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]{1,5})?(\/[a-z0-9]+([._-][a-z0-9]+)*)+@sha256:[0-9a-f]{64}$/;

const settings = z.object({
  OPTIONS_SCHEMA_VERSION: z.literal('2', { error: 'must be 2' }).transform(() => 2 as const),
  OPTIONS_REVISION: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected 1 to 64 characters of A-Z, a-z, 0-9, ".", "_" or "-"'),
  NAMESPACE: dnsLabel,
  WORKSPACE_STORAGE_PROVIDER_ID: z.enum(SUPPORTED_STORAGE_PROVIDERS, {
    error: `expected one of ${SUPPORTED_STORAGE_PROVIDERS.join(', ')}`,
  }),
  CONTAINER_IMAGE: z
    .string()
    .regex(IMAGE, 'expected a digest-pinned image <registry>/<path>@sha256:<64 hex>'),
  CONTAINER_IMAGE_PLATFORM: z.enum(SUPPORTED_PLATFORMS, { error: 'must be linux/amd64' }),
  CONTAINER_IMAGE_COMPRESSED_PULL_BYTES: int(1, Number.MAX_SAFE_INTEGER),
  RUNTIME_CLASS_NAME: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'expected a RuntimeClass name')
    .max(253),
  EXPECTED_RUNTIME_HANDLER: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'expected a runtime handler name (a DNS label)')
    .max(63),
  CPU_REQUEST: quantity(cpuCores, CPU_BOUNDS, 'CPU quantity between 10m and 64 (e.g. 500m, 2)'),
  MEMORY_REQUEST: quantity(memoryBytes, MEMORY_BOUNDS, 'memory quantity between 64Mi and 256Gi (e.g. 2Gi)'),
  RECONCILIATION_TIMEOUT_SECONDS: int(1, 3600),
  POLL_INTERVAL_MILLISECONDS: int(50, 60_000),
  SHUTDOWN_GRACE_SECONDS: int(SHUTDOWN_GRACE_BOUNDS.min, SHUTDOWN_GRACE_BOUNDS.max).optional(),
  API_SERVER_REQUEST_TIMEOUT_SECONDS: int(1, 3600).optional(),
  AGENT_HOST_CONFIG_MAP_NAME: dnsLabel.optional(),
  AGENT_HOST_TLS_SECRET_NAME: dnsLabel.optional(),
});

/** Both names or neither: half a profile is a mistake, never the legacy template. */
function agentHostOf(
  s: { AGENT_HOST_CONFIG_MAP_NAME?: string | undefined; AGENT_HOST_TLS_SECRET_NAME?: string | undefined },
  problems: OptionsProblem[],
): AgentHostProfile | undefined {
  const configMapName = s.AGENT_HOST_CONFIG_MAP_NAME;
  const tlsSecretName = s.AGENT_HOST_TLS_SECRET_NAME;
  if (configMapName !== undefined && tlsSecretName !== undefined) return { configMapName, tlsSecretName };
  if (configMapName === undefined && tlsSecretName === undefined) return undefined;
  const missing = configMapName === undefined ? 'AGENT_HOST_CONFIG_MAP_NAME' : 'AGENT_HOST_TLS_SECRET_NAME';
  problems.push({ variable: ENV_PREFIX + missing, reason: 'required with the other AgentHost profile name' });
  return undefined;
}

/** Reads and validates every setting; throws one AgentSandboxOptionsError naming each bad variable. */
export function loadAgentSandboxOptions(
  env: Readonly<Record<string, string | undefined>>,
  exists: (path: string) => boolean = existsSync,
): AgentSandboxOptions {
  const raw = Object.fromEntries(
    Object.keys(settings.shape).flatMap((key) => {
      const value = env[ENV_PREFIX + key]?.trim();
      return value === undefined || value === '' ? [] : [[key, value]];
    }),
  );
  const problems: OptionsProblem[] = [];
  const parsed = settings.safeParse(raw);
  if (!parsed.success) {
    const seen = new Set<string>();
    for (const issue of parsed.error.issues) {
      const key = String(issue.path[0] ?? '');
      if (seen.has(key)) continue;
      seen.add(key);
      const reason = raw[key] === undefined ? 'required' : issue.message;
      problems.push({ variable: ENV_PREFIX + key, reason });
    }
  }
  const connection = connectionOf(env, exists, problems);
  const agentHost = parsed.success ? agentHostOf(parsed.data, problems) : undefined;
  if (!parsed.success || connection === undefined || problems.length > 0) {
    throw new AgentSandboxOptionsError(problems);
  }
  const s = parsed.data;
  return {
    optionsSchemaVersion: s.OPTIONS_SCHEMA_VERSION,
    optionsRevision: s.OPTIONS_REVISION,
    namespace: s.NAMESPACE,
    workspaceStorageProviderId: s.WORKSPACE_STORAGE_PROVIDER_ID,
    containerImage: s.CONTAINER_IMAGE,
    containerImagePlatform: s.CONTAINER_IMAGE_PLATFORM,
    containerImageCompressedPullBytes: s.CONTAINER_IMAGE_COMPRESSED_PULL_BYTES,
    runtimeClassName: s.RUNTIME_CLASS_NAME,
    expectedRuntimeHandler: s.EXPECTED_RUNTIME_HANDLER,
    cpuRequest: s.CPU_REQUEST,
    memoryRequest: s.MEMORY_REQUEST,
    reconciliationTimeoutSeconds: s.RECONCILIATION_TIMEOUT_SECONDS,
    pollIntervalMilliseconds: s.POLL_INTERVAL_MILLISECONDS,
    shutdownGraceSeconds: s.SHUTDOWN_GRACE_SECONDS ?? DEFAULT_SHUTDOWN_GRACE_SECONDS,
    apiServerRequestTimeoutSeconds: s.API_SERVER_REQUEST_TIMEOUT_SECONDS ?? 60,
    ...(agentHost === undefined ? {} : { agentHost }),
    connection,
  };
}
