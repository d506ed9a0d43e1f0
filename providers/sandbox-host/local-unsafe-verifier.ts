// The local-unsafe enrollment profile, for development and tests. It is NOT hardware attestation:
// it proves nothing about the host's hardware, firmware, kernel, KVM or isolation. It only checks
// that a small self-described JSON document is internally consistent (the certificate's CN names
// the host, the certificate is a current client certificate, the result key is Ed25519). Anyone
// who can reach the enrollment path with such a document can enroll under this profile, so a
// deployment that must trust its hosts needs a real attestation verifier behind the same interface.
import { createPublicKey } from 'node:crypto';
import { z } from 'zod';
import type { EnrollmentVerdict, EnrollmentVerifier } from './enrollment.ts';
import { readCertificate } from './host-certificate.ts';
import { isEd25519Key } from './signing.ts';

export const LOCAL_UNSAFE_PROFILE = 'local-unsafe-metadata-only';

/** The evidence document: UTF-8 JSON, at most 64 KiB. */
export const localEvidenceSchema = z.strictObject({
  hostId: z.string().min(1).max(256),
  certificatePem: z.string().min(1).max(16_384),
  resultPublicKeyPem: z.string().min(1).max(4096),
});
export type LocalEvidence = z.infer<typeof localEvidenceSchema>;

const MAX_EVIDENCE_BYTES = 65_536;

function parse(evidence: Uint8Array): LocalEvidence | null {
  if (evidence.byteLength > MAX_EVIDENCE_BYTES) return null;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(evidence);
    const parsed = localEvidenceSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function isEd25519Pem(pem: string): boolean {
  try {
    return isEd25519Key(createPublicKey(pem), 'public');
  } catch {
    return false;
  }
}

/**
 * Metadata-only verifier (profile `local-unsafe-metadata-only`). NOT hardware attestation: see the
 * file header. `now` judges the certificate's validity window.
 */
export function createLocalUnsafeVerifier(now: () => Date = () => new Date()): EnrollmentVerifier {
  return {
    profile: LOCAL_UNSAFE_PROFILE,
    verify(evidence: Uint8Array): EnrollmentVerdict {
      const doc = parse(evidence);
      if (doc === null) return { accepted: false, reason: 'evidence-malformed' };
      const cert = readCertificate(doc.certificatePem);
      if (cert === null) return { accepted: false, reason: 'certificate-invalid' };
      if (cert.commonName !== doc.hostId) return { accepted: false, reason: 'host-id-mismatch' };
      if (!cert.clientAuth) return { accepted: false, reason: 'certificate-not-client' };
      const t = now().getTime();
      if (t < Date.parse(cert.notBefore) || t >= Date.parse(cert.notAfter)) {
        return { accepted: false, reason: 'certificate-expired' };
      }
      if (!isEd25519Pem(doc.resultPublicKeyPem)) return { accepted: false, reason: 'result-key-invalid' };
      return {
        accepted: true,
        hostId: doc.hostId,
        certificatePem: doc.certificatePem,
        resultPublicKeyPem: doc.resultPublicKeyPem,
      };
    },
  };
}

/** The metadata-only verifier on the wall clock. NOT hardware attestation. */
export const localUnsafeVerifier: EnrollmentVerifier = createLocalUnsafeVerifier();
