// The AgentHost Workspace flush and the read-only Workspace resume as data: the binding a Host
// holds, the receipt (its journal boundary included) or content proof it answers, and the checks
// every implementation applies to that answer before anyone may use it.
// A receipt is accepted only when it parses strictly and every field names exactly the binding and
// flush that were asked for; anything else is a refusal with a reason, never a silent accept. An
// answer that never came is not a verdict: that is AgentHostUnavailableError.
import { z } from 'zod';
import { problemClass } from '../../lib/errors.ts';

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
const count = z.number().int().nonnegative();
const instant = z.iso.datetime({ offset: true });
const id = z.string().min(1).max(256);

/** The binding as it travels to and from a Host: the lease and Workspace, without the endpoint. */
export const hostBindingSchema = z.strictObject({
  environmentId: id,
  operationId: id,
  resourceGeneration: count,
  providerFence: count,
  resourceId: id,
  podUid: id.nullable(),
  workspaceVolumeId: id,
  dataGeneration: count,
  networkPolicyGeneration: count,
});
export type HostBinding = z.infer<typeof hostBindingSchema>;

export const flushRequestBodySchema = z.strictObject({
  binding: hostBindingSchema,
  flushOperationId: id,
  transitionRevision: z.number().int().positive(),
});
export type FlushRequestBody = z.infer<typeof flushRequestBodySchema>;

/** The Host stopped accepting native turns and drained the ones in flight. */
const nativeTurnReceiptSchema = z.strictObject({
  flushOperationId: id,
  acceptingTurns: z.literal(false),
  drainedTurns: count,
  stoppedAt: instant,
});

/** The Host's caches are written to the Workspace and synced: an empty cache is not persistence. */
const cacheAcknowledgmentSchema = z.strictObject({
  flushOperationId: id,
  durable: z.literal(true),
  cacheSha256: sha256Hex,
  cacheBytes: z.number().int().positive(),
  writtenAt: instant,
});

/** What the Workspace holds after the flush, and the data generation it now stands for. */
const workspaceFlushReceiptSchema = z.strictObject({
  flushOperationId: id,
  transitionRevision: z.number().int().positive(),
  workspaceVolumeId: id,
  dataGeneration: count,
  nextDataGeneration: z.number().int().positive(),
  treeHash: sha256Hex,
  fileCount: count,
  byteCount: count,
  flushedAt: instant,
});

/**
 * The session journal boundary the flush closed on: the saved checkpoint, the upper (flushed)
 * position it covers, and the SHA-256 over the ordered journal entries up to that position. A
 * resumed Host without the native cache rebuilds to exactly this boundary, never a later one.
 */
export const journalBoundarySchema = z.strictObject({
  flushOperationId: id,
  checkpointId: id,
  upperPosition: z.number().int().positive(),
  journalSha256: sha256Hex,
});
export type JournalBoundary = z.infer<typeof journalBoundarySchema>;

export const flushReceiptSchema = z.strictObject({
  /** The binding the Host held when it flushed. */
  binding: hostBindingSchema,
  nativeTurns: nativeTurnReceiptSchema,
  cache: cacheAcknowledgmentSchema,
  flush: workspaceFlushReceiptSchema,
  journal: journalBoundarySchema,
});
export type AgentHostFlushReceipt = z.infer<typeof flushReceiptSchema>;

/** `POST /runtime/v1/workspace/resume`: the binding the resume names, and the resume operation. */
export const workspaceResumeRequestBodySchema = z.strictObject({
  binding: hostBindingSchema,
  resumeOperationId: id,
});
export type WorkspaceResumeRequestBody = z.infer<typeof workspaceResumeRequestBodySchema>;

/**
 * The Host's read-only answer for a resume: the binding it holds, the resume it answers, and the
 * native content proof of the Workspace as it reads the tree now (the tree hash is inside it).
 */
export const workspaceResumeAnswerSchema = z.strictObject({
  binding: hostBindingSchema,
  resumeOperationId: id,
  contentProof: z.strictObject({
    treeHash: sha256Hex,
    fileCount: count,
    byteCount: count,
    computedAt: instant,
  }),
});
export type AgentHostWorkspaceResume = z.infer<typeof workspaceResumeAnswerSchema>;

/** Why a Host refused, as it says so on the wire (a fixed set: nothing else is believed). */
export const hostRefusalCodes = [
  'not-configured',
  'binding-mismatch',
  'operation-conflict',
  'workspace-refused',
  'flush-failed',
] as const;
export type HostRefusalCode = (typeof hostRefusalCodes)[number];
export const hostRefusalSchema = z.strictObject({
  refused: z.enum(hostRefusalCodes),
  message: z.string().max(1024),
});

/** Why a caller refuses: the Host's own refusal, or an answer that is malformed or names something else. */
export type RefusalReason = HostRefusalCode | 'receipt-malformed' | 'receipt-mismatch';

/** `reason` is a fixed code; the message names the field, never response content. */
export class AgentHostFlushRefusedError extends problemClass({
  code: 'agenthost-flush-refused',
  status: 409,
  title: 'AgentHost flush refused',
}) {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(`the Workspace flush was refused (${reason}): ${message}`);
  }

  override get detail(): string {
    return `the Workspace flush was refused (${this.reason})`;
  }
}

export class AgentHostWorkspaceResumeRefusedError extends problemClass({
  code: 'agenthost-workspace-resume-refused',
  status: 409,
  title: 'AgentHost Workspace resume refused',
}) {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(`the Workspace resume read was refused (${reason}): ${message}`);
  }

  override get detail(): string {
    return `the Workspace resume read was refused (${this.reason})`;
  }
}

/** `reason` is a transport code or a fixed phrase, never response content: caller-safe. */
export class AgentHostUnavailableError extends problemClass({
  code: 'agenthost-unavailable',
  status: 503,
  title: 'AgentHost unavailable',
}) {
  constructor(
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`the AgentHost cannot be asked: ${message}`, options);
  }

  override get detail(): string {
    return `the AgentHost cannot be asked (${this.reason})`;
  }
}

/**
 * The fields of a port binding (actors/ports.ts AgentHostWorkspaceBinding, which adds the endpoint)
 * that travel to the Host. This module names only its own types, so the port can name them.
 */
export function hostBindingOf(binding: HostBinding): HostBinding {
  return {
    environmentId: binding.environmentId,
    operationId: binding.operationId,
    resourceGeneration: binding.resourceGeneration,
    providerFence: binding.providerFence,
    resourceId: binding.resourceId,
    podUid: binding.podUid,
    workspaceVolumeId: binding.workspaceVolumeId,
    dataGeneration: binding.dataGeneration,
    networkPolicyGeneration: binding.networkPolicyGeneration,
  };
}

/** The first field where two bindings differ, or undefined when they are the same. */
export function bindingDifference(asked: HostBinding, held: HostBinding): string | undefined {
  return (Object.keys(asked) as (keyof HostBinding)[]).find((key) => asked[key] !== held[key]);
}

/** The receipt, once it is exactly the one `request` on `binding` must produce. */
export function checkFlushReceipt(
  binding: HostBinding,
  request: { flushOperationId: string; transitionRevision: number },
  answer: unknown,
): AgentHostFlushReceipt {
  const parsed = flushReceiptSchema.safeParse(answer);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') ?? '';
    throw new AgentHostFlushRefusedError('receipt-malformed', `the receipt is malformed at "${where}"`);
  }
  const receipt = parsed.data;
  const differs = bindingDifference(hostBindingOf(binding), receipt.binding);
  if (differs !== undefined) {
    throw new AgentHostFlushRefusedError(
      'receipt-mismatch',
      `the receipt names another binding (${differs})`,
    );
  }
  const expected: [string, unknown, unknown][] = [
    ['nativeTurns.flushOperationId', receipt.nativeTurns.flushOperationId, request.flushOperationId],
    ['cache.flushOperationId', receipt.cache.flushOperationId, request.flushOperationId],
    ['flush.flushOperationId', receipt.flush.flushOperationId, request.flushOperationId],
    ['journal.flushOperationId', receipt.journal.flushOperationId, request.flushOperationId],
    ['flush.transitionRevision', receipt.flush.transitionRevision, request.transitionRevision],
    ['flush.workspaceVolumeId', receipt.flush.workspaceVolumeId, binding.workspaceVolumeId],
    ['flush.dataGeneration', receipt.flush.dataGeneration, binding.dataGeneration],
    ['flush.nextDataGeneration', receipt.flush.nextDataGeneration, binding.dataGeneration + 1],
  ];
  const wrong = expected.find(([, actual, wanted]) => actual !== wanted);
  if (wrong !== undefined) {
    throw new AgentHostFlushRefusedError('receipt-mismatch', `the receipt's ${wrong[0]} does not match`);
  }
  return receipt;
}

/** The Workspace resume answer, once it is for exactly `binding` and the resume asked about. */
export function checkWorkspaceResume(
  binding: HostBinding,
  request: { resumeOperationId: string },
  answer: unknown,
): AgentHostWorkspaceResume {
  const refuse = (reason: RefusalReason, message: string): never => {
    throw new AgentHostWorkspaceResumeRefusedError(reason, message);
  };
  const parsed = workspaceResumeAnswerSchema.safeParse(answer);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') ?? '';
    return refuse('receipt-malformed', `the answer is malformed at "${where}"`);
  }
  const differs = bindingDifference(hostBindingOf(binding), parsed.data.binding);
  if (differs !== undefined)
    return refuse('receipt-mismatch', `the answer names another binding (${differs})`);
  if (parsed.data.resumeOperationId !== request.resumeOperationId) {
    return refuse('receipt-mismatch', 'the answer is for another resume operation');
  }
  return parsed.data;
}
