// The AgentHost resume activation and session state as data: the request body a Host is asked to
// start its Runtime with, the receipt it answers, its session state answer, and the checks every
// implementation applies to those answers before anyone may use them. An activation carries one
// server-issued resume attempt, Core's current Runtime registration and the acknowledged server
// configuration bytes; its receipt is accepted only when it parses strictly and names exactly the
// binding, attempt, operation, registration and configuration SHA-256 that were asked. A session
// state answer is accepted only for the binding asked. Anything else is a refusal with a reason,
// never a silent accept; an answer that never came is AgentHostUnavailableError (outcome unknown).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { problemClass } from '../../lib/errors.ts';
import { bindingDifference, hostBindingOf, hostBindingSchema, type HostBinding } from './flush.ts';

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
const count = z.number().int().nonnegative();
const instant = z.iso.datetime({ offset: true });
const id = z.string().min(1).max(256);
/** The largest server configuration a Host is sent (bytes, before base64). */
export const MAX_CONFIGURATION_BYTES = 256 * 1024;

/** The attempt identity fields shared by the request and the receipt, in one place. */
const attemptFields = {
  resumeOperationId: id,
  attemptId: id,
  attemptSeq: z.number().int().positive(),
  bootstrapId: id,
  consumeId: id,
  exchangeId: id,
};

const registrationSchema = z.strictObject({
  registrationId: id,
  profileId: id,
  sessionId: id,
  generation: count,
});

export const activationRequestBodySchema = z.strictObject({
  binding: hostBindingSchema,
  ...attemptFields,
  registration: registrationSchema,
  /** Exactly the acknowledged configuration bytes (base64), whose SHA-256 is `sha256`. */
  configuration: z.strictObject({
    sha256: sha256Hex,
    base64: z.base64().max(Math.ceil(MAX_CONFIGURATION_BYTES / 3) * 4),
  }),
});
export type ActivationRequestBody = z.infer<typeof activationRequestBodySchema>;

/**
 * How the Host recovers its native state: from the cache a flush wrote, or by rebuilding from the
 * saved session journal. A rebuild records the journal evidence it rebuilt from: the source cache
 * acknowledgment the flush saved (kept apart: it is not claimed restored, the native cache stays
 * pending until an authorized turn), the saved checkpoint, the upper position, the ordered journal
 * digest, and the current resume attempt. Without that evidence a rebuild is not a receipt.
 */
const recoverySchema = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.literal('NativeCache'), cacheSha256: sha256Hex }),
  z.strictObject({
    mode: z.literal('JournalRebuild'),
    nativeCache: z.literal('PendingUntilAuthorizedTurn'),
    sourceCacheSha256: sha256Hex,
    checkpointId: id,
    upperPosition: z.number().int().positive(),
    journalSha256: sha256Hex,
    attemptId: id,
  }),
]);
export type ActivationRecovery = z.infer<typeof recoverySchema>;

export const activationReceiptSchema = z.strictObject({
  /** The binding the Host held when it activated. */
  binding: hostBindingSchema,
  ...attemptFields,
  registrationId: id,
  sessionId: id,
  registrationGeneration: count,
  configurationSha256: sha256Hex,
  recovery: recoverySchema,
  activatedAt: instant,
});
export type AgentHostActivationReceipt = z.infer<typeof activationReceiptSchema>;

export const sessionStateRequestBodySchema = z.strictObject({ binding: hostBindingSchema });
export type SessionStateRequestBody = z.infer<typeof sessionStateRequestBodySchema>;

export const sessionStateSchema = z.discriminatedUnion('state', [
  z.strictObject({
    binding: hostBindingSchema,
    state: z.literal('Active'),
    attemptId: id,
    registrationId: id,
  }),
  z.strictObject({ binding: hostBindingSchema, state: z.literal('Missing') }),
]);
export type AgentHostSessionState = z.infer<typeof sessionStateSchema>;

/**
 * Why a Host refused an activation or a session state read, as it says so on the wire (a fixed
 * set: nothing else is believed). `session-active`: another attempt already holds an Active session
 * on this Host. `attempt-conflict`: this attempt ID was asked before with another request.
 * `configuration-mismatch`: the configuration bytes do not hash to the SHA-256 sent with them.
 * `journal-unavailable`: the Workspace holds no native cache and the Host finds no saved journal
 * boundary (or a journal that does not match it) to rebuild from.
 */
export const activationRefusalCodes = [
  'not-configured',
  'binding-mismatch',
  'session-active',
  'attempt-conflict',
  'configuration-mismatch',
  'journal-unavailable',
  'activation-failed',
] as const;
export type ActivationRefusalCode = (typeof activationRefusalCodes)[number];
export const activationRefusalSchema = z.strictObject({
  refused: z.enum(activationRefusalCodes),
  message: z.string().max(1024),
});

/** Why a caller refuses: the Host's own refusal, or an answer malformed or naming something else. */
export type ActivationRefusalReason = ActivationRefusalCode | 'receipt-malformed' | 'receipt-mismatch';

/** `reason` is a fixed code; the message names the field, never response content. */
export class AgentHostActivationRefusedError extends problemClass({
  code: 'agenthost-activation-refused',
  status: 409,
  title: 'AgentHost activation refused',
}) {
  constructor(
    readonly reason: ActivationRefusalReason,
    message: string,
  ) {
    super(`the Runtime activation was refused (${reason}): ${message}`);
  }

  override get detail(): string {
    return `the Runtime activation was refused (${this.reason})`;
  }
}

/** What the port is asked (actors/ports.ts AgentHostActivationRequest, restated to avoid a cycle). */
export interface ActivationAsk {
  resumeOperationId: string;
  attemptId: string;
  attemptSeq: number;
  bootstrapId: string;
  consumeId: string;
  exchangeId: string;
  registration: { registrationId: string; profileId: string; sessionId: string; generation: number };
  configuration: { sha256: string; bytes: Uint8Array };
}

/** The wire body of an activation: the binding without its endpoint, the bytes as base64. */
export function activationRequestBody(binding: HostBinding, request: ActivationAsk): ActivationRequestBody {
  return {
    binding: hostBindingOf(binding),
    resumeOperationId: request.resumeOperationId,
    attemptId: request.attemptId,
    attemptSeq: request.attemptSeq,
    bootstrapId: request.bootstrapId,
    consumeId: request.consumeId,
    exchangeId: request.exchangeId,
    registration: {
      registrationId: request.registration.registrationId,
      profileId: request.registration.profileId,
      sessionId: request.registration.sessionId,
      generation: request.registration.generation,
    },
    configuration: {
      sha256: request.configuration.sha256,
      base64: Buffer.from(request.configuration.bytes).toString('base64'),
    },
  };
}

/** Whether the configuration bytes of a request body hash to the SHA-256 sent with them. */
export function configurationMatches(body: ActivationRequestBody): boolean {
  const bytes = Buffer.from(body.configuration.base64, 'base64');
  return createHash('sha256').update(bytes).digest('hex') === body.configuration.sha256;
}

/** The receipt, once it is exactly the one `request` on `binding` must produce. */
export function checkActivationReceipt(
  binding: HostBinding,
  request: ActivationAsk,
  answer: unknown,
): AgentHostActivationReceipt {
  const parsed = activationReceiptSchema.safeParse(answer);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') ?? '';
    throw new AgentHostActivationRefusedError('receipt-malformed', `the receipt is malformed at "${where}"`);
  }
  const receipt = parsed.data;
  const differs = bindingDifference(hostBindingOf(binding), receipt.binding);
  if (differs !== undefined) {
    throw new AgentHostActivationRefusedError(
      'receipt-mismatch',
      `the receipt names another binding (${differs})`,
    );
  }
  const expected: [string, unknown, unknown][] = [
    ['resumeOperationId', receipt.resumeOperationId, request.resumeOperationId],
    ['attemptId', receipt.attemptId, request.attemptId],
    ['attemptSeq', receipt.attemptSeq, request.attemptSeq],
    ['bootstrapId', receipt.bootstrapId, request.bootstrapId],
    ['consumeId', receipt.consumeId, request.consumeId],
    ['exchangeId', receipt.exchangeId, request.exchangeId],
    ['registrationId', receipt.registrationId, request.registration.registrationId],
    ['sessionId', receipt.sessionId, request.registration.sessionId],
    ['registrationGeneration', receipt.registrationGeneration, request.registration.generation],
    ['configurationSha256', receipt.configurationSha256, request.configuration.sha256],
  ];
  if (receipt.recovery.mode === 'JournalRebuild') {
    expected.push(['recovery.attemptId', receipt.recovery.attemptId, request.attemptId]);
  }
  const wrong = expected.find(([, actual, wanted]) => actual !== wanted);
  if (wrong !== undefined) {
    throw new AgentHostActivationRefusedError('receipt-mismatch', `the receipt's ${wrong[0]} does not match`);
  }
  return receipt;
}

/** The session state answer, once it is for exactly `binding`. */
export function checkSessionState(binding: HostBinding, answer: unknown): AgentHostSessionState {
  const parsed = sessionStateSchema.safeParse(answer);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') ?? '';
    throw new AgentHostActivationRefusedError('receipt-malformed', `the answer is malformed at "${where}"`);
  }
  const differs = bindingDifference(hostBindingOf(binding), parsed.data.binding);
  if (differs !== undefined) {
    throw new AgentHostActivationRefusedError(
      'receipt-mismatch',
      `the answer names another binding (${differs})`,
    );
  }
  return parsed.data;
}
