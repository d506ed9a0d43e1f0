// Core's suspend/resume side as data: the Environment run step a question names, Core's current
// operation for it, the saved evidence Core is asked to confirm, and the Runtime registration Core
// owns. Every shape is a strict zod schema, and every answer, from the embedded stand-in or over
// HTTP, is parsed with it and must name exactly the step (or operation) that was asked about:
// an answer about anything else is refused, never used.
import { z } from 'zod';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { CoreAnswerRefusedError } from '../build-test/core-errors.ts';

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/);
const count = z.number().int().nonnegative();
const positive = z.number().int().positive();
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

/** The Environment serving one run step: what every runtime question to Core names. */
export const runtimeStepRefSchema = z.strictObject({
  tenantId: id,
  projectId: id,
  runId: id,
  stepId: id,
  /** An Environment ID as Sandlot issues it (actors/environment-id.ts). */
  environmentId: z.string().regex(/^env_[a-z2-7]{32}$/),
});
export type RuntimeStepRef = z.infer<typeof runtimeStepRefSchema>;

export const runtimeOperationKinds = ['suspend', 'resume'] as const;
export type RuntimeOperationKind = (typeof runtimeOperationKinds)[number];

/**
 * Where Core's operation stands: Reserved (resolve may read), Fenced (Core saved the resolved
 * request), Committed (Core committed the manifest; release or prepare may proceed), then Completed
 * or Abandoned. Only Reserved, Fenced and Committed are current.
 */
export const runtimeOperationStates = ['reserved', 'fenced', 'committed', 'completed', 'abandoned'] as const;
export type RuntimeOperationState = (typeof runtimeOperationStates)[number];
export const currentRuntimeOperationStates: readonly RuntimeOperationState[] = [
  'reserved',
  'fenced',
  'committed',
];

/** What an operation fixes when Core reserves it; only its state and state revision move later. */
export const runtimeOperationTermsSchema = z.strictObject({
  kind: z.enum(runtimeOperationKinds),
  /** The placement the operation is about: the (source) lease, its generation and provider fence. */
  placement: z.strictObject({
    leaseOperationId: id,
    resourceGeneration: count,
    providerFence: count,
  }),
  /** The Workspace volume and the transition revision its flush must carry. */
  workspace: z.strictObject({
    volumeId: id,
    transitionRevision: positive,
  }),
  /** Core requires the placement's release to be confirmed current before it completes. */
  requireReleaseCurrent: z.boolean(),
});
export type RuntimeOperationTerms = z.infer<typeof runtimeOperationTermsSchema>;

export const runtimeOperationSchema = runtimeOperationTermsSchema.extend({
  ref: runtimeStepRefSchema,
  operationId: id,
  state: z.enum(runtimeOperationStates),
  /** Moves by one with every state change, so a held answer is told apart from a later one. */
  stateRevision: positive,
});
export type RuntimeOperation = z.infer<typeof runtimeOperationSchema>;

/**
 * The evidence Environment saved for an operation, as Core saved it too: the flush transition
 * revision, the data generation the verified flush reached, the SHA-256 of the canonical Host
 * receipt, and the SHA-256 of the manifest Core committed.
 */
export const savedOperationEvidenceSchema = z.strictObject({
  transitionRevision: positive,
  dataGeneration: count,
  hostReceiptSha256: sha256,
  manifestSha256: sha256,
});
export type SavedOperationEvidence = z.infer<typeof savedOperationEvidenceSchema>;

export type SavedOperationVerdict = { confirmed: true } | { confirmed: false; reason: string };

/** The verdict as it travels: it names the operation it is about, which must be the one asked. */
export const savedOperationVerdictWireSchema = z.discriminatedUnion('confirmed', [
  z.strictObject({ operationId: id, confirmed: z.literal(true) }),
  z.strictObject({ operationId: id, confirmed: z.literal(false), reason: z.string().min(1).max(1024) }),
]);

/** The Runtime registration Core owns for an Environment: a new Runtime is a new generation. */
export const runtimeRegistrationSchema = z.strictObject({
  ref: runtimeStepRefSchema,
  registrationId: id,
  profileId: id,
  sessionId: id,
  generation: positive,
});
export type RuntimeRegistration = z.infer<typeof runtimeRegistrationSchema>;

export const MAX_RUNTIME_ANSWER_BYTES = 64 * 1024;

export function sameStep(a: RuntimeStepRef, b: RuntimeStepRef): boolean {
  return (
    a.tenantId === b.tenantId &&
    a.projectId === b.projectId &&
    a.runId === b.runId &&
    a.stepId === b.stepId &&
    a.environmentId === b.environmentId
  );
}

/** SHA-256 of the canonical form: how an operation or evidence is compared whole. */
export function runtimeHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * Parses an answer strictly and checks that it names the step asked about. Both implementations
 * run every answer through here, so neither can hand out something the other would refuse.
 */
export function acceptRuntimeAnswer<T extends { ref: RuntimeStepRef }>(
  schema: z.ZodType<T>,
  value: unknown,
  asked: RuntimeStepRef,
  what: string,
): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new CoreAnswerRefusedError('malformed', `the ${what} is malformed`);
  if (!sameStep(parsed.data.ref, asked)) {
    throw new CoreAnswerRefusedError('reference-mismatch', `the ${what} names another Environment or step`);
  }
  return parsed.data;
}

/** Checks a wire verdict names the operation asked about and drops that name. */
export function acceptVerdict(value: unknown, operationId: string): SavedOperationVerdict {
  const parsed = savedOperationVerdictWireSchema.safeParse(value);
  if (!parsed.success) throw new CoreAnswerRefusedError('malformed', 'the confirmation is malformed');
  if (parsed.data.operationId !== operationId) {
    throw new CoreAnswerRefusedError('reference-mismatch', 'the confirmation names another operation');
  }
  return parsed.data.confirmed ? { confirmed: true } : { confirmed: false, reason: parsed.data.reason };
}
