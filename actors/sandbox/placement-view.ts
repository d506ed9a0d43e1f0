// The v1 placement projection: what a downstream service may know of the exact current, Active,
// unexpired lease. Built from the lease row alone (never from caller arguments, run selection or
// runtime registration); no provider option values, release descriptors, recovery metadata or
// credentials. The ResourceId is returned exactly as stored.
import { z } from 'zod';

export const providerPinSchema = z.object({
  providerId: z.string(),
  adapterVersion: z.string(),
  optionsSchemaVersion: z.number().int(),
  optionsRevision: z.string(),
  resourceId: z.string(),
  resourceGeneration: z.number().int(),
  capabilities: z.array(z.string()),
});

export const placementProjectionSchema = z.object({
  version: z.literal('v1'),
  tenantId: z.string(),
  projectId: z.string(),
  runId: z.string(),
  environmentId: z.string(),
  lifecycleGeneration: z.number().int(),
  operationId: z.string(),
  resourceGeneration: z.number().int(),
  providerFence: z.number().int(),
  currentFencingGeneration: z.number().int(),
  lease: z.object({
    revision: z.number().int(),
    state: z.literal('Active'),
    current: z.literal(true),
    expiresAt: z.string().nullable(),
    updatedAt: z.string(),
  }),
  resource: z.object({
    resourceId: z.string(),
    /** The HTTPS endpoint the provider recorded for the sandbox, if any. */
    endpoint: z.string().nullable(),
    /** Opaque placement references recorded by the lease (namespace, claim, Pod, node, Pod IP…). */
    placement: z.record(z.string(), z.string()),
  }),
  providerPin: providerPinSchema,
});
export type PlacementProjection = z.infer<typeof placementProjectionSchema>;
export type ProviderPin = z.infer<typeof providerPinSchema>;
