// What Core sends to resume bootstrap and what it answers (docs/suspend-resume.md "Bootstrap").
// Core's phase-4 request repeats the resume request as Core saved it (operation, manifest, Host
// receipt digest, flush revision), the restored placement prepare answered and verify proved, and
// Core's current Runtime registration. It never carries configuration (Environment reads the
// acknowledged bytes from Events) and never chooses an attempt: attempts are issued here, one per
// registration, and a caller may only name one it was given.
import { z } from 'zod';
import { sha256Hex } from '../../lib/canonical-json.ts';
import { resumeVerifyRequestSchema } from './requests.ts';

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/);

export const bootstrapRegistrationSchema = z.strictObject({
  registrationId: id,
  profileId: id,
  sessionId: id,
  generation: z.number().int().positive(),
});
export type BootstrapRegistration = z.infer<typeof bootstrapRegistrationSchema>;

export const resumeBootstrapRequestSchema = resumeVerifyRequestSchema.extend({
  /** Core's resume phase: bootstrap is phase 4, after Core advanced its execution fence. */
  phase: z.literal(4),
  registration: bootstrapRegistrationSchema,
  /** An attempt ID this service issued (a replay naming it); absent, the registration's attempt. */
  attemptId: z
    .string()
    .regex(/^rba_[0-9a-f]{32}$/)
    .optional(),
});
export type ResumeBootstrapRequest = z.infer<typeof resumeBootstrapRequestSchema>;

/** One attempt's identities: distinct, derived from the operation and the attempt's number only. */
export interface AttemptIdentity {
  attemptId: string;
  attemptSeq: number;
  bootstrapId: string;
  consumeId: string;
  exchangeId: string;
}

export function attemptIdentityOf(resumeOperationId: string, attemptSeq: number): AttemptIdentity {
  const of = (role: string) =>
    sha256Hex(`resume-bootstrap:${role}:${resumeOperationId}:${attemptSeq}`).slice(0, 32);
  return {
    attemptId: `rba_${of('attempt')}`,
    attemptSeq,
    bootstrapId: `rbb_${of('bootstrap')}`,
    consumeId: `rbc_${of('consume')}`,
    exchangeId: `rbx_${of('exchange')}`,
  };
}

/** The attempt as answered: its identity, state and deliveries (never configuration bytes). */
export interface AttemptView extends AttemptIdentity {
  resumeOperationId: string;
  registrationId: string;
  registrationGeneration: number;
  state: 'Delivering' | 'Activated' | 'Refused' | 'StateLost';
  deliveries: number;
}

/**
 * Bootstrap's answer: the Runtime started on the new Host (the Host's receipt), or an explicit
 * state loss (the Host acknowledged the attempt, and a fresh read now finds its session Missing:
 * Core must revoke exactly this registration before a replacement attempt is issued).
 */
export type ResumeBootstrapOutcome =
  | { outcome: 'Activated'; attempt: AttemptView; receipt: Record<string, unknown>; receiptSha256: string }
  | {
      outcome: 'StateLost';
      attempt: AttemptView;
      receiptSha256: string;
      loss: { observedAt: string; sessionState: 'Missing'; revokeRegistrationId: string };
    };
