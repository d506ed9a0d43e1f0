// The seam between mTLS authentication and persisted enrollment: the control listener maps a
// presented client certificate's SHA-256 fingerprint to an enrolled host and its certificate
// generation through this interface, so it never reads enrollment tables itself. Implementations
// answer only for non-revoked generations inside their validity window of an Enrolled host.
export interface HostCertificateDirectory {
  lookup(fingerprint: string, now: Date): Promise<{ hostId: string; generation: number } | null>;
}
