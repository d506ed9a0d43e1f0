// Enrollment and rotation refusals, as closed lists of stable codes. An enrollment refusal is a
// verdict about evidence and is persisted (by digest) as one of ENROLLMENT_REFUSAL_CODES, so the
// list is also what a stored decision may say; a verifier cannot invent a code. Messages name host
// ids and generations, never evidence bytes, certificates or keys.
import { SandlotError } from '../../lib/errors.ts';

/** Why evidence was refused. Published codes are never reworded: they are stored in decisions. */
export const ENROLLMENT_REFUSAL_CODES = [
  'evidence-malformed',
  'evidence-unverified',
  'certificate-invalid',
  'certificate-not-client',
  'certificate-expired',
  'certificate-in-use',
  'host-id-mismatch',
  'host-already-enrolled',
  'result-key-invalid',
] as const;
export type EnrollmentRefusalCode = (typeof ENROLLMENT_REFUSAL_CODES)[number];

export function isEnrollmentRefusalCode(value: unknown): value is EnrollmentRefusalCode {
  return typeof value === 'string' && (ENROLLMENT_REFUSAL_CODES as readonly string[]).includes(value);
}

/** Why a certificate rotation or revocation was refused, or a verifier could not decide. */
export const HOST_ENROLLMENT_ERROR_CODES = [
  'host-not-enrolled',
  'certificate-invalid',
  'certificate-in-use',
  'certificate-rotation-conflict',
  'certificate-generation-unknown',
  'enrollment-verifier-failed',
  'enrollment-conflict',
] as const;
export type HostEnrollmentErrorCode = (typeof HOST_ENROLLMENT_ERROR_CODES)[number];

const TITLES: Readonly<Record<HostEnrollmentErrorCode, { status: number; title: string }>> = {
  'host-not-enrolled': { status: 404, title: 'Sandbox host not enrolled' },
  'certificate-invalid': { status: 400, title: 'Sandbox host certificate invalid' },
  'certificate-in-use': { status: 409, title: 'Sandbox host certificate already registered' },
  'certificate-rotation-conflict': { status: 409, title: 'Sandbox host certificate rotation conflict' },
  'certificate-generation-unknown': { status: 404, title: 'Sandbox host certificate generation unknown' },
  'enrollment-verifier-failed': { status: 503, title: 'Enrollment verifier failed' },
  'enrollment-conflict': { status: 409, title: 'Enrollment decided concurrently' },
};

export class HostEnrollmentError extends SandlotError {
  readonly status: number;
  readonly title: string;

  constructor(
    readonly code: HostEnrollmentErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`sandbox host enrollment (${code}): ${message}`, options);
    this.status = TITLES[code].status;
    this.title = TITLES[code].title;
  }
}

/** The persisted trust history does not form a valid trust (or a concurrent writer moved it). */
export class TrustStoreError extends SandlotError {
  readonly status = 500;
  readonly title = 'Verification trust store inconsistent';

  constructor(
    readonly code: 'trust-history-invalid' | 'trust-replacement-raced',
    message: string,
  ) {
    super(`verification trust store (${code}): ${message}`);
  }
}
