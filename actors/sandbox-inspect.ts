// Inspecting a lease observes the provider exactly (a describe attempt, journaled before the call)
// and reports readyForDispatch only when the lease is Active, the provider's exact observation is
// in the configured phase, and the requested network policy generation verifies fresh through the
// NetworkPolicyVerifier port (a verifier that cannot answer fails the inspection with 503).
import { randomUUID } from 'node:crypto';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { ProviderResource, SandboxProvider } from '../providers/provider.ts';
import { classifyProviderFailure } from '../providers/errors.ts';
import { insertAttempt, resolveAttempt } from '../store/attempts.ts';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import type { Database } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import type { LeaseRow } from '../store/leases.ts';
import type { NetworkPolicyVerifier } from './ports.ts';
import type { ActorRuntime } from './runtime.ts';
import { networkPolicyVerified } from './sandbox-admission.ts';

export interface Observation {
  exact: boolean;
  phase: string | null;
  finished: string | null;
  error: { code: string; message: string } | null;
}

export interface Readiness {
  readyForDispatch: boolean;
  observation: Observation | null;
  networkPolicy: { generation: number | null; verified: boolean };
}

export interface InspectDeps {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  provider: SandboxProvider;
  networkPolicies: NetworkPolicyVerifier;
  readyPhase: string;
  describeTimeoutMs: number;
}

/** What an exact observation needs: no readiness phase, no network policy. */
export type ObserveDeps = Omit<InspectDeps, 'readyPhase' | 'networkPolicies'>;

async function describe(deps: ObserveDeps, env: EnvironmentRow, lease: LeaseRow): Promise<Observation> {
  const resourceId = lease.resource?.resourceId;
  if (resourceId === undefined) return { exact: false, phase: null, finished: null, error: null };
  const owner = {
    tenantId: env.tenantId,
    projectId: env.projectId,
    runId: env.runId,
    environmentId: env.environmentId,
    ownerHash: String(lease.recoveryRequest['ownerHash']),
    lifecycleGeneration: lease.lifecycleGeneration,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    operationId: lease.operationId,
  };
  const request = { resourceId, ownerHash: owner.ownerHash };
  const attemptId = `${lease.operationId}.describe.${randomUUID()}`;
  // Read-only, so it never blocks release; still journaled before the call like every provider call.
  await insertAttempt(deps.db, {
    attemptId,
    environmentId: env.environmentId,
    operationId: lease.operationId,
    kind: 'describe',
    tenantId: env.tenantId,
    projectId: env.projectId,
    runId: env.runId,
    lifecycleGeneration: lease.lifecycleGeneration,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    fencingGeneration: lease.currentFencingGeneration,
    request,
    requestFingerprint: sha256Hex(canonicalJson({ kind: 'describe', ...request })),
    state: 'Dispatched',
  });
  try {
    const result = await deps.provider.describe(
      { owner, resourceId, options: lease.providerOptions },
      {
        signal: AbortSignal.timeout(deps.describeTimeoutMs),
        deadline: new Date(Date.now() + deps.describeTimeoutMs),
      },
    );
    const resource: ProviderResource | null = result.present ? result.resource : null;
    await resolveAttempt(deps.db, attemptId, { state: 'Succeeded', receipt: result });
    return {
      exact: resource !== null,
      phase: resource?.phase ?? null,
      finished: resource?.finished?.reason ?? null,
      error: null,
    };
  } catch (error) {
    const detail = {
      code: classifyProviderFailure(error),
      message: error instanceof Error ? error.message : String(error),
    };
    await resolveAttempt(deps.db, attemptId, { state: 'Unknown', error: detail });
    return { exact: false, phase: null, finished: null, error: detail };
  }
}

/**
 * Describes an Active lease exactly and tells the Environment what changed (a new phase, or a
 * finished run, which retires placement). Used by inspection and by the periodic observer.
 */
export async function observeLease(
  deps: ObserveDeps,
  env: EnvironmentRow,
  lease: LeaseRow,
  actor: string,
): Promise<Observation | null> {
  const observation = lease.state === 'Active' ? await describe(deps, env, lease) : null;
  if (
    observation?.exact === true &&
    observation.phase !== null &&
    (observation.phase !== lease.resource?.phase || observation.finished !== null)
  ) {
    await deps.runtime.send(
      env.environmentId,
      {
        type: 'sandbox.observed',
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
        phase: observation.phase as 'pending' | 'scheduled' | 'image-ready' | 'started',
        finished: observation.finished as 'PodSucceeded' | 'PodFailed' | null,
      },
      { actor },
    );
  }
  return observation;
}

export async function inspectLease(
  deps: InspectDeps,
  env: EnvironmentRow,
  lease: LeaseRow,
  networkPolicyGeneration: number | undefined,
  actor: string,
): Promise<Readiness> {
  const observation = await observeLease(deps, env, lease, actor);
  const verified =
    networkPolicyGeneration !== undefined &&
    networkPolicyGeneration === lease.networkPolicyGeneration &&
    (await networkPolicyVerified(deps.networkPolicies, env.tenantId, env.projectId, networkPolicyGeneration));
  const ready =
    lease.state === 'Active' &&
    observation?.exact === true &&
    observation.finished === null &&
    observation.phase === deps.readyPhase &&
    verified;
  return {
    readyForDispatch: ready,
    observation,
    networkPolicy: { generation: networkPolicyGeneration ?? null, verified },
  };
}
