// What the Environment machine asks the runtime to do, as zod schemas: the single source of these
// shapes. `effect.provider` becomes an attempt row (Pending) and an outbox row in the transition's
// transaction; `record.*` actions are row writes in that same transaction. Workers parse an effect
// with these schemas; nothing casts one.
import { z } from 'zod';
import {
  cleanupSourceSchema,
  generationSchema,
  instantSchema,
  resourceSummarySchema,
  workspaceMountSchema,
  type EnvironmentEvent,
  type ResourceSummary,
} from './environment-events.ts';
import {
  sandboxStates,
  type CleanupItem,
  type LeaseContext,
  type OwnerFence,
  type SandboxState,
} from './environment-context.ts';

const generation = generationSchema;

/**
 * Every provider call the machine can declare. `describe` is read-only and never blocks release;
 * `cleanup` releases a late resource under its saved source binding, and `sweep` lists what a
 * terminal lease's owner hash and fence still own (both belong to the cleanup region, not the lease).
 */
export const effectKinds = [
  'provision',
  'release',
  'listOwned',
  'describe',
  'renew',
  'cleanup',
  'sweep',
  'buildTest',
] as const;
export type EffectKind = (typeof effectKinds)[number];

export const effectFencesSchema = z.strictObject({
  lifecycleGeneration: generation,
  resourceGeneration: generation,
  providerFence: generation,
  fencingGeneration: generation,
});
export type EffectFences = z.infer<typeof effectFencesSchema>;

/** Everything a provider call needs, frozen when the attempt is opened (recorded as its request). */
export const attemptRequestSchema = z.strictObject({
  ownerHash: z.string(),
  workspace: workspaceMountSchema,
  networkPolicyGeneration: generation,
  providerOptions: z.record(z.string(), z.unknown()),
  resourceId: z.string().nullable(),
  releaseIdempotencyKey: z.string().nullable(),
  /** provision: the lease's expiry; renew: the expiry asked for (absent: none, or an older row). */
  expiresAt: instantSchema.nullable().optional(),
  /** A cleanup attempt: which item, under which claim, authorized by which owner fence. */
  cleanup: z
    .strictObject({
      cleanupId: z.string(),
      claimToken: z.string(),
      authorizingFence: z.strictObject({ lifecycleGeneration: generation, providerFence: generation }),
    })
    .optional(),
  /** A BuildTest step (the commands region): which operation, which step, on which lease. */
  buildTest: z
    .strictObject({
      operationId: z.string(),
      step: z.enum(['command', 'collect', 'cleanup']),
      leaseOperationId: z.string(),
    })
    .optional(),
});
export type AttemptRequest = z.infer<typeof attemptRequestSchema>;

/** One provider call to make, exactly as the attempt row will record it. */
export const providerEffectSchema = z.strictObject({
  attemptId: z.string(),
  kind: z.enum(effectKinds),
  operationId: z.string(),
  fences: effectFencesSchema,
  request: attemptRequestSchema,
});
export type ProviderEffect = z.infer<typeof providerEffectSchema>;

const failureSchema = z.object({ code: z.string(), message: z.string() });

/** A lease row write the runtime performs in the transition's transaction. */
export const leaseRecordSchema = z.strictObject({
  resourceGeneration: generation,
  state: z.enum(sandboxStates),
  currentFencingGeneration: generation,
  resource: resourceSummarySchema.nullable(),
  releaseReceipt: z.record(z.string(), z.unknown()).nullable(),
  failure: failureSchema.nullable(),
  expired: z.boolean(),
  /** The lease's expiry as it stands (a renewal moves it); absent in records from before renewals. */
  expiresAt: instantSchema.nullable().optional(),
});
export type LeaseRecord = z.infer<typeof leaseRecordSchema>;

/** A new lease row (its first state comes from the same transition's `record.lease`). */
export const leaseReservationSchema = z.strictObject({
  operationId: z.string(),
  idempotencyKey: z.string(),
  lifecycleGeneration: generation,
  resourceGeneration: generation,
  providerFence: generation,
  currentFencingGeneration: generation,
  ownerHash: z.string(),
  workspace: workspaceMountSchema,
  networkPolicyGeneration: generation,
  expiresAt: instantSchema.nullable(),
});
export type LeaseReservation = z.infer<typeof leaseReservationSchema>;

export const reservationOf = (lease: LeaseContext): LeaseReservation => ({
  operationId: lease.operationId,
  idempotencyKey: lease.idempotencyKey,
  lifecycleGeneration: lease.lifecycleGeneration,
  resourceGeneration: lease.resourceGeneration,
  providerFence: lease.providerFence,
  currentFencingGeneration: lease.currentFencingGeneration,
  ownerHash: lease.ownerHash,
  workspace: lease.workspace,
  networkPolicyGeneration: lease.networkPolicyGeneration,
  expiresAt: lease.expiresAt,
});

/** An unresolved attempt settled by reconciliation rather than by its own result. */
export const attemptResolutionSchema = z.strictObject({
  attemptId: z.string(),
  state: z.enum(['Succeeded', 'Superseded']),
  resolution: z.string(),
});
export type AttemptResolution = z.infer<typeof attemptResolutionSchema>;

export const attemptIdFor = (operationId: string, kind: EffectKind, seq: number) =>
  `${operationId}.${kind}.${seq}`;

export function effectFor(lease: LeaseContext, attemptId: string, kind: EffectKind): ProviderEffect {
  return {
    attemptId,
    kind,
    operationId: lease.operationId,
    fences: {
      lifecycleGeneration: lease.lifecycleGeneration,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      fencingGeneration: lease.currentFencingGeneration,
    },
    request: {
      ownerHash: lease.ownerHash,
      workspace: lease.workspace,
      networkPolicyGeneration: lease.networkPolicyGeneration,
      providerOptions: lease.providerOptions,
      resourceId: lease.resource?.resourceId ?? null,
      releaseIdempotencyKey:
        kind === 'release' ? `${lease.operationId}.release.${lease.currentFencingGeneration}` : null,
      ...(kind === 'provision' ? { expiresAt: lease.expiresAt } : {}),
      ...(kind === 'renew' ? { expiresAt: lease.renewal?.expiresAt ?? null } : {}),
    },
  };
}

export function leaseRecord(
  lease: LeaseContext,
  state: SandboxState,
  releaseReceipt: Record<string, unknown> | null = null,
): LeaseRecord {
  const resource: ResourceSummary | null = lease.resource;
  return {
    resourceGeneration: lease.resourceGeneration,
    state,
    currentFencingGeneration: lease.currentFencingGeneration,
    resource,
    releaseReceipt,
    failure: lease.failure,
    expired: lease.expired,
    expiresAt: lease.expiresAt,
  };
}

/**
 * The release of a late resource: the saved source binding and fence are the provider request's
 * identity (and its idempotency key is the item's own, the same across claims); the attempt's
 * fencing generation is the owner fence's provider fence that authorized it.
 */
export function cleanupEffectFor(
  cleanupId: string,
  item: CleanupItem,
  attemptId: string,
  claimToken: string,
  authorizingFence: OwnerFence,
): ProviderEffect {
  const { source } = item;
  return {
    attemptId,
    kind: 'cleanup',
    operationId: source.operationId,
    fences: {
      lifecycleGeneration: source.lifecycleGeneration,
      resourceGeneration: source.resourceGeneration,
      providerFence: source.providerFence,
      fencingGeneration: authorizingFence.providerFence,
    },
    request: {
      ownerHash: source.ownerHash,
      workspace: source.workspace,
      networkPolicyGeneration: 1,
      providerOptions: source.providerOptions,
      resourceId: item.resourceId,
      releaseIdempotencyKey: `${cleanupId}.release`,
      cleanup: { cleanupId, claimToken, authorizingFence },
    },
  };
}

/** A new cleanup row; `holdWorkspace` re-attaches the source's volume while the resource lives. */
export const cleanupRecordSchema = z.strictObject({
  cleanupId: z.string(),
  foundBy: z.enum(['late-result', 'owner-listing']),
  sourceAttemptId: z.string().nullable(),
  source: cleanupSourceSchema,
  resource: resourceSummarySchema,
  holdWorkspace: z.boolean(),
});
export type CleanupRecord = z.infer<typeof cleanupRecordSchema>;

export const cleanupClaimRecordSchema = z.strictObject({
  cleanupId: z.string(),
  claimToken: z.string(),
  claimedAt: instantSchema,
  claimExpiresAt: instantSchema,
  attemptId: z.string(),
  authorizingFence: z.strictObject({ lifecycleGeneration: generation, providerFence: generation }),
});
export type CleanupClaimRecord = z.infer<typeof cleanupClaimRecordSchema>;

/** The receipt is durable; the source's volume is detached only when the lifecycle fences match. */
export const cleanupReleasedRecordSchema = z.strictObject({
  cleanupId: z.string(),
  receipt: z.record(z.string(), z.unknown()),
  detachWorkspace: z.strictObject({ volumeId: z.string(), lease: generation }).nullable(),
});
export type CleanupReleasedRecord = z.infer<typeof cleanupReleasedRecordSchema>;

export const cleanupFailedRecordSchema = z.strictObject({
  cleanupId: z.string(),
  error: z.object({ code: z.string(), message: z.string() }),
});
export type CleanupFailedRecord = z.infer<typeof cleanupFailedRecordSchema>;

type SweepEvent = Extract<EnvironmentEvent, { type: 'cleanup.sweep' }>;

/** An exact owner listing for a terminal lease, under that lease's frozen request and fences. */
export function sweepEffectFor(event: EnvironmentEvent): ProviderEffect {
  if (event.type !== 'cleanup.sweep') throw new Error('not cleanup.sweep');
  const e: SweepEvent = event;
  return {
    attemptId: attemptIdFor(e.operationId, 'sweep', e.sweep),
    kind: 'sweep',
    operationId: e.operationId,
    fences: {
      lifecycleGeneration: e.lifecycleGeneration,
      resourceGeneration: e.resourceGeneration,
      providerFence: e.providerFence,
      fencingGeneration: e.fencingGeneration,
    },
    request: {
      ownerHash: e.ownerHash,
      workspace: e.workspace,
      networkPolicyGeneration: e.networkPolicyGeneration,
      providerOptions: e.providerOptions,
      resourceId: null,
      releaseIdempotencyKey: null,
    },
  };
}

/** The sweep is counted on the lease row, so it is not due again. */
export const sweepOpenedRecordSchema = z.strictObject({ resourceGeneration: generation, sweep: generation });
export type SweepOpenedRecord = z.infer<typeof sweepOpenedRecordSchema>;

export function sweepOpenedOf(event: EnvironmentEvent): SweepOpenedRecord {
  if (event.type !== 'cleanup.sweep') throw new Error('not cleanup.sweep');
  return { resourceGeneration: event.resourceGeneration, sweep: event.sweep };
}
