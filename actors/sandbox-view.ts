import type { LeaseRow } from '../store/leases.ts';

/** What callers see of a lease: fences, state and placement; never provider options or credentials. */
export interface LeaseView {
  environmentId: string;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  lifecycleGeneration: number;
  state: string;
  current: boolean;
  phase: string | null;
  resourceId: string | null;
  placement: Record<string, string> | null;
  workspace: LeaseRow['workspace'];
  networkPolicyGeneration: number;
  provider: { providerId: unknown; adapterVersion: unknown; optionsRevision: unknown };
  failure: { code: string; message: string } | null;
  revision: number;
  createdAt: string;
  updatedAt: string;
}

const currentStates = new Set(['Provisioning', 'Active', 'Releasing', 'ReconciliationRequired']);

export function leaseView(lease: LeaseRow): LeaseView {
  return {
    environmentId: lease.environmentId,
    operationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    currentFencingGeneration: lease.currentFencingGeneration,
    lifecycleGeneration: lease.lifecycleGeneration,
    state: lease.state,
    current: currentStates.has(lease.state),
    phase: lease.resource?.phase ?? null,
    resourceId: lease.resource?.resourceId ?? null,
    placement: lease.resource?.placement ?? null,
    workspace: lease.workspace,
    networkPolicyGeneration: lease.networkPolicyGeneration,
    provider: {
      providerId: lease.providerIdentity['providerId'],
      adapterVersion: lease.providerIdentity['adapterVersion'],
      optionsRevision: lease.providerIdentity['optionsRevision'],
    },
    failure: lease.failure,
    revision: lease.revision,
    createdAt: new Date(lease.createdAt).toISOString(),
    updatedAt: new Date(lease.updatedAt).toISOString(),
  };
}
