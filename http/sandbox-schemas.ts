import { z } from '@hono/zod-openapi';
import { cleanupViewSchema } from '../actors/cleanups.ts';
import { conditionSchema } from '../actors/sandbox/readiness.ts';
import { leaseViewSchema } from '../actors/sandbox/view.ts';
import { MAX_INT32 } from '../lib/limits.ts';
import { decimalInteger, waitQuery } from './schemas.ts';
import {
  abandonEventSchema,
  generationSchema,
  idempotencyKeySchema,
  provisionEventSchema,
} from '../machines/environment-events.ts';

const generation = generationSchema;

/** The caller's part of the machine's sandbox.provision event; the rest is Sandlot's. */
export const provisionBody = provisionEventSchema
  .pick({ idempotencyKey: true, workspace: true, networkPolicyGeneration: true })
  .meta({ id: 'ProvisionSandbox' });

export const abandonBody = abandonEventSchema.omit({ type: true }).meta({ id: 'AbandonSandbox' });

export const renewBody = z
  .strictObject({
    expectedResourceGeneration: generation,
    providerFence: generation,
    idempotencyKey: idempotencyKeySchema,
  })
  .openapi('RenewSandbox');

export const renewSchema = z
  .object({
    lease: leaseViewSchema,
    renewal: z.object({
      idempotencyKey: z.string(),
      /** The expiry asked for; the lease's `expiresAt` moved to it once `state` is Succeeded. */
      expiresAt: z.string(),
      attemptId: z.string(),
      state: z.enum(['Pending', 'Succeeded', 'Failed']),
      error: z.object({ code: z.string(), message: z.string() }).nullable(),
    }),
  })
  .openapi('SandboxRenewal');

export const reconcileBody = z
  .strictObject({
    operationId: z.string().regex(/^op_[a-z2-7]{32}$/, 'is not an operation ID'),
    resourceGeneration: generation,
    providerFence: generation,
    networkPolicyGeneration: generation.optional(),
  })
  .openapi('ReconcileSandbox');

export const volumeBody = z
  .strictObject({ idempotencyKey: idempotencyKeySchema })
  .openapi('CreateWorkspaceVolume');

export const volumeSchema = z
  .object({
    volumeId: z.string(),
    environmentId: z.string(),
    resourceGeneration: z.number().int(),
    dataGeneration: z.number().int(),
    state: z.string(),
    transitionRevision: z.number().int(),
  })
  .openapi('WorkspaceVolume');

export const leaseSchema = leaseViewSchema.meta({ id: 'SandboxLease' });

export const inspectSchema = z
  .object({
    lease: leaseSchema,
    /** The Environment's revision when this was read: pass it as `after` to wait for the next change. */
    environmentRevision: z.number().int(),
    readyForDispatch: z.boolean(),
    /** The Environment's phase: the provider's (pending … started), or `configured` once ready. */
    phase: z.string().nullable(),
    /** One condition per requirement of readiness; readyForDispatch when every one is True. */
    conditions: z.array(conditionSchema.meta({ id: 'ReadinessCondition' })),
    observation: z
      .object({
        exact: z.boolean(),
        phase: z.string().nullable(),
        finished: z.string().nullable(),
        /** The Pod that answered (Kubernetes); `pod-replaced` when it is not the one mapped. */
        podUid: z.string().optional(),
        error: z.object({ code: z.string(), message: z.string() }).nullable(),
      })
      .nullable(),
    networkPolicy: z.object({ generation: z.number().int().nullable(), verified: z.boolean() }),
  })
  .openapi('SandboxInspection');

export const attemptSchema = z
  .object({
    attemptId: z.string(),
    kind: z.string(),
    state: z.string(),
    lifecycleGeneration: z.number().int(),
    resourceGeneration: z.number().int(),
    providerFence: z.number().int(),
    fencingGeneration: z.number().int(),
    requestFingerprint: z.string(),
    createdAt: z.string(),
    dispatchedAt: z.string().nullable(),
    deadlineAt: z.string().nullable(),
    resolvedAt: z.string().nullable(),
    dispatchCount: z.number().int(),
    resolution: z.string().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    receipt: z.unknown(),
    /** A result that arrived after the attempt was settled by other evidence. */
    lateResult: z.unknown(),
    lateResultAt: z.string().nullable(),
  })
  .openapi('ProviderAttempt');

export const cleanupSchema = cleanupViewSchema.meta({ id: 'LateResourceCleanup' });

export const reconcileSchema = leaseViewSchema
  .extend({
    lateResourceCleanup: cleanupSchema.nullable(),
    /** Only when the body named a generation: whether it is the lease's and verified now. */
    networkPolicy: z.object({ generation: z.number().int(), verified: z.boolean() }).nullable(),
  })
  .meta({ id: 'ReconcileResult' });

export const networkPolicyQuery = z.object({
  networkPolicyGeneration: decimalInteger(1, MAX_INT32)
    .optional()
    .openapi({ param: { name: 'networkPolicyGeneration', in: 'query' }, example: 1 }),
});

/** The inspection's query: the network policy generation to verify, and an optional long-poll wait. */
export const inspectQuery = networkPolicyQuery.extend(waitQuery.shape);
