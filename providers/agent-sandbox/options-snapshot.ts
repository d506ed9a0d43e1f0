// The options a lease freezes at reservation and every later call on it obeys: the namespace to look
// in, what the template must hold, the deletion bounds, and the cluster pin. Recovery reads these,
// never the process's current settings. It never holds a credential: the token stays in its file.
import { z } from 'zod';
import { definitive } from '../errors.ts';
import type { ProviderOptionsSnapshot } from '../provider.ts';
import { isDnsLabel } from './names.ts';
import {
  DEFAULT_SHUTDOWN_GRACE_SECONDS,
  SHUTDOWN_GRACE_BOUNDS,
  type AgentSandboxOptions,
} from './options.ts';
import { CPU_BOUNDS, cpuCores, MEMORY_BOUNDS, memoryBytes } from './quantity.ts';

const within = (parse: (t: string) => number | undefined, bounds: { min: number; max: number }) =>
  z.string().refine((text) => {
    const value = parse(text);
    return value !== undefined && value >= bounds.min && value <= bounds.max;
  });

export const snapshotSchema = z.strictObject({
  providerId: z.literal('agent-sandbox'),
  optionsSchemaVersion: z.literal(2),
  optionsRevision: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/),
  namespace: z.string().refine(isDnsLabel),
  workspaceStorageProviderId: z.literal('azure-files-csi'),
  containerImage: z.string().regex(/^[^\s@]+@sha256:[0-9a-f]{64}$/),
  containerImagePlatform: z.literal('linux/amd64'),
  containerImageCompressedPullBytes: z.number().int().positive(),
  runtimeClassName: z.string().min(1).max(253),
  expectedRuntimeHandler: z.string().min(1).max(63),
  cpu: within(cpuCores, CPU_BOUNDS),
  memory: within(memoryBytes, MEMORY_BOUNDS),
  reconciliationTimeoutSeconds: z.number().int().min(1).max(3600),
  pollIntervalMilliseconds: z.number().int().min(50).max(60_000),
  clusterPin: z.string().regex(/^[0-9a-f]{64}$/),
  // Both optional, so snapshots frozen before they existed still parse: no grace recorded means the
  // default; no profile means the legacy template.
  shutdownGraceSeconds: z
    .number()
    .int()
    .min(SHUTDOWN_GRACE_BOUNDS.min)
    .max(SHUTDOWN_GRACE_BOUNDS.max)
    .optional(),
  agentHost: z
    .strictObject({
      configMapName: z.string().refine(isDnsLabel),
      tlsSecretName: z.string().refine(isDnsLabel),
    })
    .optional(),
});

export type AgentSandboxSnapshot = z.output<typeof snapshotSchema>;

export function snapshotOf(options: AgentSandboxOptions, clusterPin: string): AgentSandboxSnapshot {
  return {
    providerId: 'agent-sandbox',
    optionsSchemaVersion: options.optionsSchemaVersion,
    optionsRevision: options.optionsRevision,
    namespace: options.namespace,
    workspaceStorageProviderId: options.workspaceStorageProviderId,
    containerImage: options.containerImage,
    containerImagePlatform: options.containerImagePlatform,
    containerImageCompressedPullBytes: options.containerImageCompressedPullBytes,
    runtimeClassName: options.runtimeClassName,
    expectedRuntimeHandler: options.expectedRuntimeHandler,
    cpu: options.cpuRequest,
    memory: options.memoryRequest,
    reconciliationTimeoutSeconds: options.reconciliationTimeoutSeconds,
    pollIntervalMilliseconds: options.pollIntervalMilliseconds,
    clusterPin,
    shutdownGraceSeconds: options.shutdownGraceSeconds,
    ...(options.agentHost === undefined
      ? {}
      : {
          agentHost: {
            configMapName: options.agentHost.configMapName,
            tlsSecretName: options.agentHost.tlsSecretName,
          },
        }),
  };
}

/** The lease's grace between its expiry and the claim's shutdown time. */
export function shutdownGraceOf(snapshot: AgentSandboxSnapshot): number {
  return snapshot.shutdownGraceSeconds ?? DEFAULT_SHUTDOWN_GRACE_SECONDS;
}

/** A snapshot this adapter did not write (or a corrupted one) is refused before any request. */
export function parseSnapshot(snapshot: ProviderOptionsSnapshot): AgentSandboxSnapshot {
  const parsed = snapshotSchema.safeParse(snapshot);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || '(root)'))];
    throw definitive(
      'invalid-options-snapshot',
      `Agent Sandbox options snapshot refused: ${fields.join(', ')}`,
    );
  }
  return parsed.data;
}
