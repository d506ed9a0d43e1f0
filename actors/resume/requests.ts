// What Core sends to the resume steps and what they answer (docs/suspend-resume.md "Resume"). The
// manifest is Core's committed suspend manifest, complete: the source lease, the flushed Workspace
// with its content hash, the saved Host receipt's digest and the private configuration
// acknowledgment. Environment confirms it with Core (its SHA-256 is the saved evidence's
// `manifestSha256`) and never takes a fact from it that its own records do not also hold.
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { configurationAcknowledgmentSchema } from '../runtime-events/material.ts';
import { runtimeOperationSchema, type SavedOperationEvidence } from '../runtime-core/runtime-operation.ts';

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/);
const positive = z.number().int().positive().max(2_147_483_647);
const hex = z.string().regex(/^[0-9a-f]{64}$/, 'expected a lower-case SHA-256 hex digest');

export const resumeManifestSchema = z.strictObject({
  /** The suspended lease, as it was when its flush was verified. */
  source: z.strictObject({
    leaseOperationId: z.string().min(1).max(200),
    lifecycleGeneration: positive,
    resourceGeneration: positive,
    providerFence: positive,
    networkPolicyGeneration: positive,
  }),
  /** The flushed Workspace: the flush's transition revision, the data generation it advanced to. */
  workspace: z.strictObject({
    volumeId: id,
    transitionRevision: positive,
    dataGeneration: positive,
    treeHash: hex,
    fileCount: z.number().int().nonnegative(),
    byteCount: z.number().int().nonnegative(),
  }),
  hostReceiptSha256: hex,
  /** The private configuration acknowledgment: a resume without it is refused before any effect. */
  configuration: configurationAcknowledgmentSchema.nullable(),
});
export type ResumeManifest = z.infer<typeof resumeManifestSchema>;

/** The placement prepare made, as Core saves it and sends it back to verify. */
export const restoredWorkspaceSchema = z.strictObject({
  operationId: z.string(),
  lifecycleGeneration: positive,
  lease: z.strictObject({
    operationId: z.string(),
    lifecycleGeneration: positive,
    resourceGeneration: positive,
    providerFence: positive,
    resourceId: z.string(),
  }),
  workspace: z.strictObject({
    volumeId: id,
    state: z.literal('Attached'),
    transitionRevision: positive,
    resourceGeneration: positive,
    dataGeneration: positive,
    mountPath: z.string(),
    readOnly: z.boolean(),
  }),
  networkPolicyGeneration: positive,
});
export type RestoredWorkspace = z.infer<typeof restoredWorkspaceSchema>;

/** RuntimeWorkspaceResumeRequest: `restoredWorkspace` must be absent for prepare. */
export const resumePrepareRequestSchema = z.strictObject({
  operation: runtimeOperationSchema,
  manifest: resumeManifestSchema,
  hostReceiptSha256: hex,
  transitionRevision: positive,
  restoredWorkspace: restoredWorkspaceSchema.optional(),
});
export type ResumePrepareRequest = z.infer<typeof resumePrepareRequestSchema>;

export const resumeVerifyRequestSchema = resumePrepareRequestSchema.extend({
  restoredWorkspace: restoredWorkspaceSchema,
});
export type ResumeVerifyRequest = z.infer<typeof resumeVerifyRequestSchema>;

/** The final receipt: native content proof and the verified new network generation. */
export interface ResumeReceipt {
  operationId: string;
  restoredWorkspace: RestoredWorkspace;
  contentProof: { treeHash: string; fileCount: number; byteCount: number; computedAt: string };
  networkPolicyGeneration: number;
  verifiedAt: string;
}

/** The evidence Core saved for the resume: what it confirms before any step relies on it. */
export function savedEvidenceOf(request: ResumePrepareRequest): SavedOperationEvidence {
  return {
    transitionRevision: request.transitionRevision,
    dataGeneration: request.manifest.workspace.dataGeneration,
    hostReceiptSha256: request.hostReceiptSha256,
    manifestSha256: sha256Hex(canonicalJson(request.manifest)),
  };
}

/** The stable key of everything one resume does once (lifecycle advance, provision). */
export const resumeKeyOf = (operationId: string) => `resume:${operationId}`;

/**
 * The resume a lease was provisioned for, read from its idempotency key: the lease's saved provider
 * request keeps it, so a later read (after a restart too) knows the lease is that resume's own.
 */
export function resumeSourceOf(idempotencyKey: string): { operationId: string } | null {
  return idempotencyKey.startsWith('resume:') && idempotencyKey.length > 'resume:'.length
    ? { operationId: idempotencyKey.slice('resume:'.length) }
    : null;
}
