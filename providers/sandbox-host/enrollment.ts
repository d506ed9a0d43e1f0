// Host enrollment: an explicit verifier judges TRANSIENT raw evidence, and only the evidence's
// SHA-256 digest and the verifier's safe outcome are persisted, never the evidence. Invariants:
// one decision per digest, written once (primary key); a digest refused before is refused again
// from the stored decision without calling the verifier; an acceptance registers the host, its
// result-signing key (version 1) and certificate generation 1 (Current) in the same transaction as
// the decision, so a host is never half-enrolled. A verifier that throws decides nothing: no row is
// written and the caller may retry, because a transient failure must not refuse evidence forever.
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import type { Database } from '../../store/db.ts';
import {
  fingerprintKnown,
  insertEnrollmentDecision,
  insertHost,
  insertHostCertificate,
  insertHostResultKey,
  markHostRetired,
  readEnrollmentDecision,
  type EnrollmentDecisionRow,
} from '../../store/sandbox-hosts.ts';
import {
  HostEnrollmentError,
  isEnrollmentRefusalCode,
  type EnrollmentRefusalCode,
} from './enrollment-errors.ts';
import { readCertificate } from './host-certificate.ts';
import { isEd25519Key } from './signing.ts';

/** What a verifier concluded about one piece of evidence. */
export type EnrollmentVerdict =
  | {
      accepted: true;
      hostId: string;
      /** The host's TLS client certificate (PEM); its DER SHA-256 becomes generation 1. */
      certificatePem: string;
      /** The host's Ed25519 result-signing public key (SPKI PEM), registered as version 1. */
      resultPublicKeyPem: string;
    }
  | { accepted: false; reason: EnrollmentRefusalCode };

/**
 * An explicit enrollment predicate. `profile` names what it proves and is stored with every
 * decision; `verify` sees the raw evidence only for the duration of the call.
 */
export interface EnrollmentVerifier {
  readonly profile: string;
  verify(evidence: Uint8Array): EnrollmentVerdict | Promise<EnrollmentVerdict>;
}

export type EnrollmentResult =
  | { outcome: 'accepted'; hostId: string; generation: 1; evidenceSha256: string; replayed: boolean }
  | { outcome: 'refused'; reason: EnrollmentRefusalCode; evidenceSha256: string; replayed: boolean };

const RESULT_KEY_VERSION = 1;
const PROFILE_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

export function evidenceDigest(evidence: Uint8Array): string {
  return createHash('sha256').update(evidence).digest('hex');
}

function fromDecision(row: EnrollmentDecisionRow, replayed: boolean): EnrollmentResult {
  if (row.outcome === 'Accepted' && row.hostId !== null) {
    return {
      outcome: 'accepted',
      hostId: row.hostId,
      generation: 1,
      evidenceSha256: row.evidenceSha256,
      replayed,
    };
  }
  const reason = isEnrollmentRefusalCode(row.reasonCode) ? row.reasonCode : 'evidence-unverified';
  return { outcome: 'refused', reason, evidenceSha256: row.evidenceSha256, replayed };
}

function publicKeyOf(pem: string): KeyObject | null {
  try {
    const key = createPublicKey(pem);
    return isEd25519Key(key, 'public') ? key : null;
  } catch {
    return null;
  }
}

async function askVerifier(verifier: EnrollmentVerifier, evidence: Uint8Array): Promise<EnrollmentVerdict> {
  if (!PROFILE_PATTERN.test(verifier.profile)) {
    throw new HostEnrollmentError(
      'enrollment-verifier-failed',
      'verifier profile name is not 1-128 safe characters',
    );
  }
  let verdict: EnrollmentVerdict;
  try {
    verdict = await verifier.verify(evidence);
  } catch (error) {
    // Only the error's class: a verifier's message may quote the evidence, which is never logged.
    const kind = error instanceof Error ? error.name : typeof error;
    throw new HostEnrollmentError('enrollment-verifier-failed', `verifier ${verifier.profile} threw ${kind}`);
  }
  if (!verdict.accepted && !isEnrollmentRefusalCode(verdict.reason)) {
    return { accepted: false, reason: 'evidence-unverified' };
  }
  if (verdict.accepted && (verdict.hostId.length === 0 || verdict.hostId.length > 256)) {
    return { accepted: false, reason: 'evidence-malformed' };
  }
  return verdict;
}

/**
 * Enrolls the host the evidence describes, or refuses it; either way the decision is durable. The
 * evidence is hashed and handed to the verifier, then dropped: it is never stored or logged.
 */
export async function enrollHost(
  db: Database,
  rawEvidence: Uint8Array,
  verifier: EnrollmentVerifier,
  now: () => Date = () => new Date(),
): Promise<EnrollmentResult> {
  const evidenceSha256 = evidenceDigest(rawEvidence);
  const earlier = await readEnrollmentDecision(db, evidenceSha256);
  if (earlier !== null) return fromDecision(earlier, true);

  const verdict = await askVerifier(verifier, rawEvidence);
  const at = now();
  return db.transaction(async (tx) => {
    const refuse = async (reason: EnrollmentRefusalCode): Promise<EnrollmentResult> => {
      const row = {
        evidenceSha256,
        outcome: 'Refused' as const,
        reasonCode: reason,
        verifierProfile: verifier.profile,
        hostId: null,
      };
      if (!(await insertEnrollmentDecision(tx, row, at))) {
        const raced = await readEnrollmentDecision(tx, evidenceSha256);
        if (raced !== null) return fromDecision(raced, true);
      }
      return { outcome: 'refused', reason, evidenceSha256, replayed: false };
    };
    if (!verdict.accepted) return refuse(verdict.reason);

    const cert = readCertificate(verdict.certificatePem);
    if (cert === null) return refuse('certificate-invalid');
    const resultKey = publicKeyOf(verdict.resultPublicKeyPem);
    if (resultKey === null) return refuse('result-key-invalid');

    // Checked before anything is written, so a refusal leaves only its decision. A concurrent
    // enrollment of the same host blocks on the host's primary key and then sees it taken; one of
    // the same certificate fails its unique index and rolls back whole, to be decided again.
    if (await fingerprintKnown(tx, cert.fingerprintSha256)) return refuse('certificate-in-use');
    if (!(await insertHost(tx, { hostId: verdict.hostId, evidenceSha256, enrolledAt: at }))) {
      return refuse('host-already-enrolled');
    }
    const accepted = {
      evidenceSha256,
      outcome: 'Accepted' as const,
      reasonCode: null,
      verifierProfile: verifier.profile,
      hostId: verdict.hostId,
    };
    if (!(await insertEnrollmentDecision(tx, accepted, at))) {
      throw new HostEnrollmentError('enrollment-conflict', 'enrollment decided concurrently; retry');
    }
    const publicKeyPem = resultKey.export({ type: 'spki', format: 'pem' }).toString();
    await insertHostResultKey(
      tx,
      { hostId: verdict.hostId, keyVersion: RESULT_KEY_VERSION, publicKeyPem },
      at,
    );
    await insertHostCertificate(
      tx,
      {
        hostId: verdict.hostId,
        generation: 1,
        fingerprintSha256: cert.fingerprintSha256,
        state: 'Current',
        notBefore: cert.notBefore,
        notAfter: cert.notAfter,
      },
      at,
    );
    return { outcome: 'accepted', hostId: verdict.hostId, generation: 1, evidenceSha256, replayed: false };
  });
}

/**
 * Retires an enrolled host: from then on none of its certificate generations authenticates and no
 * envelope is issued to it. Its records are not forgotten: a listing that cannot ask it is uncertain
 * (providers/sandbox-host/provider.ts). Retiring twice answers `retired: false`.
 */
export async function retireHost(
  db: Database,
  hostId: string,
  now: () => Date = () => new Date(),
): Promise<{ retired: boolean }> {
  return db.transaction(async (tx) => ({ retired: await markHostRetired(tx, hostId, now()) }));
}
