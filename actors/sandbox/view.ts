// What callers see of a lease: fences, state and placement; never provider options or credentials.
// The schema is the single definition: the HTTP layer names it for OpenAPI, the type is inferred.
import { z } from 'zod';
import { isCurrentLeaseState } from '../../machines/environment-context.ts';
import { workspaceMountSchema } from '../../machines/environment-events.ts';
import type { LeaseRow } from '../../store/leases.ts';

export const leaseViewSchema = z.object({
  environmentId: z.string(),
  operationId: z.string(),
  resourceGeneration: z.number().int(),
  providerFence: z.number().int(),
  currentFencingGeneration: z.number().int(),
  lifecycleGeneration: z.number().int(),
  state: z.string(),
  current: z.boolean(),
  phase: z.string().nullable(),
  resourceId: z.string().nullable(),
  placement: z.record(z.string(), z.string()).nullable(),
  workspace: workspaceMountSchema,
  networkPolicyGeneration: z.number().int(),
  provider: z.object({
    providerId: z.unknown(),
    adapterVersion: z.unknown(),
    optionsRevision: z.unknown(),
  }),
  failure: z.object({ code: z.string(), message: z.string() }).nullable(),
  /** When the lease expires (null: never); `expired` once its expiry was fenced. */
  expiresAt: z.string().nullable(),
  expired: z.boolean(),
  revision: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type LeaseView = z.infer<typeof leaseViewSchema>;

export function leaseView(lease: LeaseRow): LeaseView {
  return {
    environmentId: lease.environmentId,
    operationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    currentFencingGeneration: lease.currentFencingGeneration,
    lifecycleGeneration: lease.lifecycleGeneration,
    state: lease.state,
    current: isCurrentLeaseState(lease.state),
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
    expiresAt: lease.expiresAt === null ? null : new Date(lease.expiresAt).toISOString(),
    expired: lease.expiredAt !== null,
    revision: lease.revision,
    createdAt: new Date(lease.createdAt).toISOString(),
    updatedAt: new Date(lease.updatedAt).toISOString(),
  };
}
