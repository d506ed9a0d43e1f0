// What a provider brings to the contract suite, and the fixtures the cases share. Every case makes
// its own owner (random tenant, run and operation), so cases can share one provider and one store.
import { randomBytes } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type {
  CallOptions,
  DescribeResult,
  OwnedQuery,
  OwnerBinding,
  ProviderResource,
  ProvisionRequest,
  ReleaseRequest,
  RenewRequest,
  ResourceRef,
  SandboxProvider,
} from '../../providers/provider.ts';

export interface ContractSubject {
  provider: SandboxProvider;
  faults: {
    /** The next call of `operation` is applied, but its response never reaches the caller. */
    loseNextResponse(operation: 'provision' | 'release'): void;
  };
  /**
   * How long to poll for a phase or an absence to become visible. `advance` runs before every poll,
   * for subjects that drive a fake clock or a fake controller instead of waiting on real time.
   */
  waitForPhase?: { timeoutMs?: number; intervalMs?: number; advance?: () => Promise<void> };
  /**
   * The term the provider itself recorded for a resource (Agent Sandbox: the claim's
   * `spec.lifecycle.shutdownTime`; simulated: the row's expiry) as an ISO instant, or null for none.
   * Lets the renew case see the term move, not just the receipt.
   */
  recordedTerm?(resource: ProviderResource): Promise<string | null>;
  /**
   * The resource's guest says its configuration completed (sandbox-host: the reference guest's
   * report). Only a subject whose provider carries that signal in its describe has it; without it,
   * the provider must never report `configured` by itself.
   */
  configureGuest?(resource: ProviderResource): Promise<void>;
  close(): Promise<void>;
}

/** The fixtures only need the provider, so provider-specific tests can use them too. */
export type HasProvider = Pick<ContractSubject, 'provider'>;

export function newOwner(overrides: Partial<OwnerBinding> = {}): OwnerBinding {
  const suffix = randomBytes(5).toString('hex');
  const tuple = {
    tenantId: `tenant-${suffix}`,
    projectId: 'project-contract',
    runId: `run-${suffix}`,
    environmentId: `env-${suffix}`,
  };
  return {
    ...tuple,
    ownerHash: sha256Hex(canonicalJson(tuple)).slice(0, 40),
    lifecycleGeneration: 1,
    resourceGeneration: 1,
    providerFence: 1,
    operationId: `op-${suffix}`,
    ...overrides,
  };
}

/** Another operation under the same owner and fence (what a stray or a retried generation looks like). */
export function sameOwnerOtherOperation(owner: OwnerBinding): OwnerBinding {
  return { ...owner, operationId: `op-${randomBytes(5).toString('hex')}` };
}

export function provisionRequest(subject: HasProvider, owner: OwnerBinding): ProvisionRequest {
  return {
    owner,
    workspace: {
      volumeId: `vol-${owner.environmentId}`,
      resourceGeneration: owner.resourceGeneration,
      dataGeneration: 1,
      mountPath: '/workspace',
      readOnly: false,
    },
    networkPolicyGeneration: 1,
    options: subject.provider.optionsSnapshot(),
  };
}

export function refTo(subject: HasProvider, resource: ProviderResource): ResourceRef {
  return {
    owner: resource.owner,
    resourceId: resource.resourceId,
    options: subject.provider.optionsSnapshot(),
  };
}

export function renewalOf(subject: HasProvider, resource: ProviderResource, expiresAt: string): RenewRequest {
  return { ...refTo(subject, resource), expiresAt };
}

/** An instant `offsetMs` from now, in whole seconds (what Kubernetes keeps of a time). */
export function instantIn(offsetMs: number): string {
  return new Date(Math.floor(Date.now() / 1000) * 1000 + offsetMs).toISOString();
}

export function releaseOf(subject: HasProvider, resource: ProviderResource, key?: string): ReleaseRequest {
  return { ...refTo(subject, resource), idempotencyKey: key ?? `release-${resource.resourceId}` };
}

export function ownedBy(subject: HasProvider, owner: OwnerBinding, operationId?: string): OwnedQuery {
  const query: OwnedQuery['owner'] = { ownerHash: owner.ownerHash, providerFence: owner.providerFence };
  if (operationId !== undefined) query.operationId = operationId;
  return { owner: query, options: subject.provider.optionsSnapshot() };
}

export function presentResource(result: DescribeResult): ProviderResource {
  if (!result.present) throw new Error('expected the resource to be present, but describe found it absent');
  return result.resource;
}

/** A generous budget: contract cases are about outcomes, not speed. */
export function budget(ms = 15_000): CallOptions {
  return { signal: new AbortController().signal, deadline: new Date(Date.now() + ms) };
}

/** The rejection of `promise`; fails the case if it resolved. */
export async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the provider call to fail, but it succeeded');
}

/** Polls `probe` until `done` holds, within the subject's bounded wait; returns every value seen. */
export async function pollUntil<T>(
  subject: Pick<ContractSubject, 'waitForPhase'>,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
): Promise<T[]> {
  const { timeoutMs = 10_000, intervalMs = 10, advance } = subject.waitForPhase ?? {};
  const giveUpAt = Date.now() + timeoutMs;
  const seen: T[] = [];
  for (;;) {
    await advance?.();
    const value = await probe();
    seen.push(value);
    if (done(value)) return seen;
    if (Date.now() >= giveUpAt) throw new Error(`condition not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
