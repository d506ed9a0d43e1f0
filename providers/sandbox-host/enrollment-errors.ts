// Enrollment and rotation refusals, as closed lists of stable codes. An enrollment refusal is a
// verdict about evidence and is persisted (by digest) as one of ENROLLMENT_REFUSAL_CODES, so the
// list is also what a stored decision may say; a verifier cannot invent a code. Messages name host
// ids and generations, never evidence bytes, certificates or keys.
import { type HostProblem, SandboxHostError } from './sandbox-host-error.ts';

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

const TITLES: Readonly<Record<HostEnrollmentErrorCode, HostProblem>> = {
  'host-not-enrolled': { status: 404, title: 'Sandbox host not enrolled' },
  'certificate-invalid': { status: 400, title: 'Sandbox host certificate invalid' },
  'certificate-in-use': { status: 409, title: 'Sandbox host certificate already registered' },
  'certificate-rotation-conflict': { status: 409, title: 'Sandbox host certificate rotation conflict' },
  'certificate-generation-unknown': { status: 404, title: 'Sandbox host certificate generation unknown' },
  'enrollment-verifier-failed': { status: 503, title: 'Enrollment verifier failed' },
  'enrollment-conflict': { status: 409, title: 'Enrollment decided concurrently' },
};

export class HostEnrollmentError extends SandboxHostError<HostEnrollmentErrorCode> {
  constructor(code: HostEnrollmentErrorCode, message: string, options?: ErrorOptions) {
    super(code, TITLES[code], `sandbox host enrollment (${code}): ${message}`, options);
  }
}

/** The persisted trust history does not form a valid trust (or a concurrent writer moved it). */
export class TrustStoreError extends SandboxHostError<'trust-history-invalid' | 'trust-replacement-raced'> {
  constructor(code: 'trust-history-invalid' | 'trust-replacement-raced', message: string) {
    super(
      code,
      { status: 500, title: 'Verification trust store inconsistent' },
      `verification trust store (${code}): ${message}`,
    );
  }
}
