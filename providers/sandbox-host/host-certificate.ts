// What the control plane reads from a host's client certificate: the SHA-256 of its DER bytes (the
// exact identity the listener matches, lower-case hex without colons) and its validity window. The
// fingerprint form here is the one HostCertificateDirectory.lookup expects; a peer certificate from
// `tlsSocket.getPeerX509Certificate()` gives the same value through `certificateFingerprint`.
import { createHash, X509Certificate } from 'node:crypto';

export interface CertificateFacts {
  fingerprintSha256: string;
  /** Canonical ISO instants. */
  notBefore: string;
  notAfter: string;
  /** The subject's CN, when it has exactly one. */
  commonName: string | null;
  /** Whether the extended key usage allows TLS client authentication (absent EKU allows any). */
  clientAuth: boolean;
}

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';

export function certificateFingerprint(cert: X509Certificate): string {
  return createHash('sha256').update(cert.raw).digest('hex');
}

/** Lower-case hex without separators, or null when it is not a SHA-256 fingerprint at all. */
export function normalizeFingerprint(fingerprint: string): string | null {
  const hex = fingerprint.replaceAll(':', '').toLowerCase();
  return /^[0-9a-f]{64}$/.test(hex) ? hex : null;
}

/** Parses one PEM certificate; null when it is not one. */
export function readCertificate(pem: string): CertificateFacts | null {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch {
    return null;
  }
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (!Number.isFinite(from) || !Number.isFinite(to) || from >= to) return null;
  const names = cert.subject
    .split('\n')
    .filter((line) => line.startsWith('CN='))
    .map((line) => line.slice(3));
  const usages = cert.keyUsage as string[] | undefined;
  return {
    fingerprintSha256: certificateFingerprint(cert),
    notBefore: new Date(from).toISOString(),
    notAfter: new Date(to).toISOString(),
    commonName: names.length === 1 ? (names[0] ?? null) : null,
    clientAuth: usages === undefined || usages.includes(CLIENT_AUTH_OID),
  };
}
