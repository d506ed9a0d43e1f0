// Sandbox-host enrollment and the control plane's verification trust (migration 0023). Every write
// is compare-and-set: a state change names the state it expects, and the caller treats "no row
// changed" as a lost race, never as success. Callers run each atomic change in one transaction and
// lock the host (or the trust row) first, so concurrent rotations queue instead of interleaving.
// Enrollment evidence never reaches this file: only its digest and the verifier's outcome do.
import type { Queryable } from './db.ts';

/** A timestamptz column as a canonical UTC ISO instant, aliased. */
export const isoColumn = (column: string, alias: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "${alias}"`;

export type EnrollmentOutcomeName = 'Accepted' | 'Refused';
export type HostState = 'Enrolled' | 'Retired';
export type CertificateState = 'Current' | 'Next' | 'Previous' | 'Revoked';
export type TrustKeyRole = 'current' | 'next' | 'retired';

export interface EnrollmentDecisionRow {
  evidenceSha256: string;
  outcome: EnrollmentOutcomeName;
  reasonCode: string | null;
  verifierProfile: string;
  hostId: string | null;
  decidedAt: string;
}

export interface HostCertificateRow {
  hostId: string;
  generation: number;
  fingerprintSha256: string;
  state: CertificateState;
  notBefore: string;
  notAfter: string;
  revokedAt: string | null;
}

export interface HostResultKeyRow {
  hostId: string;
  keyVersion: number;
  publicKeyPem: string;
}

export interface TrustRow {
  revocationEpoch: number;
  revision: number;
}

export interface TrustKeyRow {
  keyVersion: number;
  publicKeyPem: string;
  notBefore: string;
  notAfter: string;
  role: TrustKeyRole;
  retiredAt: string | null;
}

// ---- Enrollment decisions ----

export async function readEnrollmentDecision(
  q: Queryable,
  evidenceSha256: string,
): Promise<EnrollmentDecisionRow | null> {
  const { rows } = await q.query<EnrollmentDecisionRow>(
    `SELECT evidence_sha256 AS "evidenceSha256", outcome, reason_code AS "reasonCode",
            verifier_profile AS "verifierProfile", host_id AS "hostId", ${isoColumn('decided_at', 'decidedAt')}
       FROM sandbox_host_enrollment_decisions WHERE evidence_sha256 = $1`,
    [evidenceSha256],
  );
  return rows[0] ?? null;
}

/** Writes a decision once; false when one already exists for that digest (it is never replaced). */
export async function insertEnrollmentDecision(
  tx: Queryable,
  row: Omit<EnrollmentDecisionRow, 'decidedAt'>,
  decidedAt: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO sandbox_host_enrollment_decisions
       (evidence_sha256, outcome, reason_code, verifier_profile, host_id, decided_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (evidence_sha256) DO NOTHING`,
    [
      row.evidenceSha256,
      row.outcome,
      row.reasonCode,
      row.verifierProfile,
      row.hostId,
      decidedAt.toISOString(),
    ],
  );
  return rowCount === 1;
}

// ---- Hosts ----

/** Locks the host's row for the rest of the transaction; null when it was never enrolled. */
export async function lockHost(tx: Queryable, hostId: string): Promise<{ state: HostState } | null> {
  const { rows } = await tx.query<{ state: HostState }>(
    'SELECT state FROM sandbox_hosts WHERE host_id = $1 FOR UPDATE',
    [hostId],
  );
  return rows[0] ?? null;
}

export async function insertHost(
  tx: Queryable,
  host: { hostId: string; evidenceSha256: string; enrolledAt: Date },
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO sandbox_hosts (host_id, state, evidence_sha256, enrolled_at)
     VALUES ($1, 'Enrolled', $2, $3) ON CONFLICT DO NOTHING`,
    [host.hostId, host.evidenceSha256, host.enrolledAt.toISOString()],
  );
  return rowCount === 1;
}

export interface HostRow {
  hostId: string;
  state: HostState;
  enrolledAt: string;
  retiredAt: string | null;
}

/** Every host, enrolled or retired, in host id order. */
export async function readHosts(q: Queryable): Promise<HostRow[]> {
  const { rows } = await q.query<HostRow>(
    `SELECT host_id AS "hostId", state, ${isoColumn('enrolled_at', 'enrolledAt')},
            ${isoColumn('retired_at', 'retiredAt')}
       FROM sandbox_hosts ORDER BY host_id`,
  );
  return rows;
}

/** Enrolled -> Retired, once; false when the host is unknown or already retired. */
export async function markHostRetired(tx: Queryable, hostId: string, at: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE sandbox_hosts SET state = 'Retired', retired_at = $2 WHERE host_id = $1 AND state = 'Enrolled'`,
    [hostId, at.toISOString()],
  );
  return rowCount === 1;
}

export async function insertHostResultKey(
  tx: Queryable,
  key: HostResultKeyRow,
  addedAt: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO sandbox_host_result_keys (host_id, key_version, public_key_pem, added_at)
     VALUES ($1, $2, $3, $4)`,
    [key.hostId, key.keyVersion, key.publicKeyPem, addedAt.toISOString()],
  );
}

/** The result-signing keys of an Enrolled host, by version; none for a retired or unknown host. */
export async function readHostResultKeys(q: Queryable, hostId: string): Promise<HostResultKeyRow[]> {
  const { rows } = await q.query<HostResultKeyRow>(
    `SELECT k.host_id AS "hostId", k.key_version AS "keyVersion", k.public_key_pem AS "publicKeyPem"
       FROM sandbox_host_result_keys k JOIN sandbox_hosts h USING (host_id)
      WHERE k.host_id = $1 AND h.state = 'Enrolled'
      ORDER BY k.key_version`,
    [hostId],
  );
  return rows;
}

// ---- Certificate generations ----

export async function fingerprintKnown(q: Queryable, fingerprintSha256: string): Promise<boolean> {
  const { rows } = await q.query('SELECT 1 FROM sandbox_host_certificates WHERE fingerprint_sha256 = $1', [
    fingerprintSha256,
  ]);
  return rows.length > 0;
}

export async function insertHostCertificate(
  tx: Queryable,
  cert: Omit<HostCertificateRow, 'revokedAt'>,
  addedAt: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO sandbox_host_certificates
       (host_id, generation, fingerprint_sha256, state, not_before, not_after, added_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      cert.hostId,
      cert.generation,
      cert.fingerprintSha256,
      cert.state,
      cert.notBefore,
      cert.notAfter,
      addedAt.toISOString(),
    ],
  );
}

export async function readHostCertificates(q: Queryable, hostId: string): Promise<HostCertificateRow[]> {
  const { rows } = await q.query<HostCertificateRow>(
    `SELECT host_id AS "hostId", generation, fingerprint_sha256 AS "fingerprintSha256", state,
            ${isoColumn('not_before', 'notBefore')}, ${isoColumn('not_after', 'notAfter')},
            ${isoColumn('revoked_at', 'revokedAt')}
       FROM sandbox_host_certificates WHERE host_id = $1 ORDER BY generation`,
    [hostId],
  );
  return rows;
}

/** Moves one generation from `from` to `to`; false when it is not in `from` (a lost race). */
export async function setCertificateState(
  tx: Queryable,
  change: { hostId: string; generation: number; from: CertificateState; to: CertificateState },
  at: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE sandbox_host_certificates
        SET state = $4, revoked_at = CASE WHEN $4 = 'Revoked' THEN $5::timestamptz ELSE NULL END
      WHERE host_id = $1 AND generation = $2 AND state = $3`,
    [change.hostId, change.generation, change.from, change.to, at.toISOString()],
  );
  return rowCount === 1;
}

/** The Enrolled host and generation a fingerprint authenticates at `now`, if any. */
export async function lookupCertificate(
  q: Queryable,
  fingerprintSha256: string,
  now: Date,
): Promise<{ hostId: string; generation: number } | null> {
  const { rows } = await q.query<{ hostId: string; generation: number }>(
    `SELECT c.host_id AS "hostId", c.generation
       FROM sandbox_host_certificates c JOIN sandbox_hosts h USING (host_id)
      WHERE c.fingerprint_sha256 = $1 AND c.state <> 'Revoked' AND h.state = 'Enrolled'
        AND c.not_before <= $2::timestamptz AND $2::timestamptz < c.not_after`,
    [fingerprintSha256, now.toISOString()],
  );
  return rows[0] ?? null;
}

// ---- Verification trust ----

/** The trust row, locked `FOR SHARE` (a consistent read) or `FOR UPDATE` (a replacement). */
export async function readTrustRow(q: Queryable, lock: 'share' | 'update'): Promise<TrustRow | null> {
  const { rows } = await q.query<TrustRow>(
    `SELECT revocation_epoch AS "revocationEpoch", revision FROM control_verification_trust
      WHERE id = 1 ${lock === 'update' ? 'FOR UPDATE' : 'FOR SHARE'}`,
  );
  return rows[0] ?? null;
}

export async function insertTrustRow(tx: Queryable, revocationEpoch: number, at: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO control_verification_trust (id, revocation_epoch, revision, updated_at)
     VALUES (1, $1, 1, $2) ON CONFLICT (id) DO NOTHING`,
    [revocationEpoch, at.toISOString()],
  );
  return rowCount === 1;
}

/** Sets the epoch and bumps the revision, only from `expectedRevision`. */
export async function updateTrustRow(
  tx: Queryable,
  expectedRevision: number,
  revocationEpoch: number,
  at: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE control_verification_trust
        SET revocation_epoch = $2, revision = revision + 1, updated_at = $3
      WHERE id = 1 AND revision = $1`,
    [expectedRevision, revocationEpoch, at.toISOString()],
  );
  return rowCount === 1;
}

export async function readTrustKeys(q: Queryable): Promise<TrustKeyRow[]> {
  const { rows } = await q.query<TrustKeyRow>(
    `SELECT key_version AS "keyVersion", public_key_pem AS "publicKeyPem",
            ${isoColumn('not_before', 'notBefore')}, ${isoColumn('not_after', 'notAfter')}, role,
            ${isoColumn('retired_at', 'retiredAt')}
       FROM control_verification_keys ORDER BY key_version`,
  );
  return rows;
}

export async function insertTrustKey(
  tx: Queryable,
  key: Omit<TrustKeyRow, 'retiredAt'>,
  addedAt: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO control_verification_keys
       (key_version, public_key_pem, not_before, not_after, role, added_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [key.keyVersion, key.publicKeyPem, key.notBefore, key.notAfter, key.role, addedAt.toISOString()],
  );
}

/** Moves a key from `from` to `to` (stamping retired_at when retiring); false on a lost race. */
export async function setTrustKeyRole(
  tx: Queryable,
  keyVersion: number,
  from: TrustKeyRole,
  to: TrustKeyRole,
  at: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE control_verification_keys
        SET role = $3, retired_at = CASE WHEN $3 = 'retired' THEN $4::timestamptz ELSE NULL END
      WHERE key_version = $1 AND role = $2 AND role <> 'retired'`,
    [keyVersion, from, to, at.toISOString()],
  );
  return rowCount === 1;
}
