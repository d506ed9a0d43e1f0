import { z } from '@hono/zod-openapi';
import { idempotencyKeySchema, workspaceMountSchema } from '../machines/environment-events.ts';

const generation = z.number().int().positive();

export const provisionBody = z
  .strictObject({
    idempotencyKey: idempotencyKeySchema,
    workspace: workspaceMountSchema,
    networkPolicyGeneration: generation,
  })
  .openapi('ProvisionSandbox');

export const abandonBody = z
  .strictObject({
    resourceGeneration: generation,
    providerFence: generation,
    idempotencyKey: idempotencyKeySchema,
  })
  .openapi('AbandonSandbox');

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
  })
  .openapi('WorkspaceVolume');

export const leaseSchema = z
  .object({
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
    revision: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('SandboxLease');

export const inspectSchema = z
  .object({
    lease: leaseSchema,
    readyForDispatch: z.boolean(),
    observation: z
      .object({
        exact: z.boolean(),
        phase: z.string().nullable(),
        finished: z.string().nullable(),
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
  })
  .openapi('ProviderAttempt');

export const networkPolicyQuery = z.object({
  networkPolicyGeneration: z.coerce
    .number()
    .int()
    .positive()
    .optional()
    .openapi({ param: { name: 'networkPolicyGeneration', in: 'query' }, example: 1 }),
});
