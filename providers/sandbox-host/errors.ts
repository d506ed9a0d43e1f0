// The sandbox-host protocol's refusals, as a closed list of stable codes. A refusal is a verdict the
// host (or the control plane, for a host's result) reaches about bytes it was handed; it is returned
// as data by the verify functions and carries one of these errors so a caller that must throw can.
// Messages name versions, sequence numbers and field paths, never key material, signatures or the
// documents an envelope carries: an envelope's spec may hold a tenant's settings.
import { fixedCodeError, type HostProblem, SandboxHostError } from './sandbox-host-error.ts';

/** Why an assignment envelope was refused. Published codes are never reworded. */
export const ENVELOPE_REFUSAL_CODES = [
  'malformed',
  'legacy-binding',
  'wrong-host',
  'key-unknown',
  'signature-invalid',
  'key-expired',
  'epoch-revoked',
  'epoch-unknown',
  'expired',
  'altered-duplicate',
  'sequence-gap',
  'stale-fence',
] as const;
export type EnvelopeRefusalCode = (typeof ENVELOPE_REFUSAL_CODES)[number];

/**
 * Refusals of an authentic envelope at exactly the next sequence that the host answers: it journals
 * the envelope as accepted with a signed `failed` result (document `{ code: 'refused', refusal,
 * message }`) and runs no effect, so the sequence is consumed and the host does not stall.
 * `lease-quarantined` is the host's own (host-errors.ts); every other refusal stays unanswered.
 */
export const ANSWERED_REFUSAL_CODES = ['expired', 'stale-fence', 'lease-quarantined'] as const;
export type AnsweredRefusalCode = (typeof ANSWERED_REFUSAL_CODES)[number];

const ENVELOPE_TITLES: Readonly<Record<EnvelopeRefusalCode, HostProblem>> = {
  malformed: { status: 400, title: 'Assignment envelope malformed' },
  'legacy-binding': { status: 400, title: 'Assignment envelope has a legacy or zero binding' },
  'wrong-host': { status: 409, title: 'Assignment envelope addressed to another host' },
  'key-unknown': { status: 403, title: 'Assignment envelope signing key unknown' },
  'signature-invalid': { status: 403, title: 'Assignment envelope signature invalid' },
  'key-expired': { status: 403, title: 'Assignment envelope signing key outside its validity' },
  'epoch-revoked': { status: 403, title: 'Assignment envelope revocation epoch revoked' },
  'epoch-unknown': { status: 409, title: 'Assignment envelope revocation epoch not yet trusted' },
  expired: { status: 410, title: 'Assignment envelope expired' },
  'altered-duplicate': { status: 409, title: 'Assignment envelope altered duplicate' },
  'sequence-gap': { status: 409, title: 'Assignment envelope sequence gap' },
  'stale-fence': { status: 409, title: 'Assignment envelope stale fence' },
};

export class EnvelopeRefusedError extends SandboxHostError<EnvelopeRefusalCode> {
  constructor(code: EnvelopeRefusalCode, message: string) {
    super(code, ENVELOPE_TITLES[code], `assignment envelope refused (${code}): ${message}`);
  }
}

/** Why a host-signed result (or one of its output chunks) was refused. */
export const RESULT_REFUSAL_CODES = [
  'result-malformed',
  'result-key-unknown',
  'result-signature-invalid',
  'result-binding-mismatch',
  'result-conflict',
  'chunk-out-of-order',
  'chunk-chain-broken',
] as const;
export type ResultRefusalCode = (typeof RESULT_REFUSAL_CODES)[number];

const RESULT_TITLES: Readonly<Record<ResultRefusalCode, string>> = {
  'result-malformed': 'Host result malformed',
  'result-key-unknown': 'Host result key unknown',
  'result-signature-invalid': 'Host result signature invalid',
  'result-binding-mismatch': 'Host result bound to another assignment',
  'result-conflict': 'Host result conflicts with the recorded one',
  'chunk-out-of-order': 'Host output chunk out of order',
  'chunk-chain-broken': 'Host output chunk chain broken',
};

export class HostResultRefusedError extends SandboxHostError<ResultRefusalCode> {
  constructor(code: ResultRefusalCode, message: string) {
    super(code, { status: 502, title: RESULT_TITLES[code] }, `host result refused (${code}): ${message}`);
  }
}

/** A trust replacement that would leave an inconsistent or rolled-back trust; the old trust stands. */
export class TrustReplacementError extends fixedCodeError({
  code: 'trust-replacement-refused',
  status: 409,
  title: 'Verification trust replacement refused',
  subject: 'verification trust replacement refused',
}) {}

/** The signer was handed something it must not sign (a legacy binding, a wrong key type). */
export class EnvelopeSigningError extends fixedCodeError({
  code: 'envelope-unsignable',
  status: 500,
  title: 'Envelope cannot be signed',
  subject: 'refusing to sign',
}) {}
