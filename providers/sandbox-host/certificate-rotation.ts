// Overlapping client-certificate rotation and per-generation revocation for enrolled hosts, and the
// PostgreSQL HostCertificateDirectory the control listener authenticates peers with. Invariants
// (migration 0023): generations only grow; at most one Current and one Next per host (unique
// indexes); every change locks the host row and moves states compare-and-set in one transaction, so
// a rotation is never half applied. Current, Next and Previous all authenticate: the host can switch
// certificates at any moment of the overlap, and the operator closes it by revoking a generation.
import type { Database } from '../../store/db.ts';
import {
  fingerprintKnown,
  insertHostCertificate,
  lockHost,
  lookupCertificate,
  readHostCertificates,
  setCertificateState,
  type HostCertificateRow,
} from '../../store/sandbox-hosts.ts';
import type { HostCertificateDirectory } from './directory.ts';
import { HostEnrollmentError } from './enrollment-errors.ts';
import { normalizeFingerprint, readCertificate } from './host-certificate.ts';

type Clock = () => Date;
const wallClock: Clock = () => new Date();

async function lockEnrolled(tx: Parameters<Parameters<Database['transaction']>[0]>[0], hostId: string) {
  const host = await lockHost(tx, hostId);
  if (host?.state !== 'Enrolled') throw new HostEnrollmentError('host-not-enrolled', `host ${hostId}`);
  return readHostCertificates(tx, hostId);
}

const conflict = (hostId: string, what: string) =>
  new HostEnrollmentError('certificate-rotation-conflict', `host ${hostId}: ${what}`);

/** Registers the host's next certificate as generation max + 1 in state Next. */
export async function addNextCertificate(
  db: Database,
  hostId: string,
  certPem: string,
  now: Clock = wallClock,
): Promise<{ generation: number }> {
  const cert = readCertificate(certPem);
  if (cert === null)
    throw new HostEnrollmentError('certificate-invalid', `host ${hostId}: not a PEM certificate`);
  return db.transaction(async (tx) => {
    const generations = await lockEnrolled(tx, hostId);
    if (generations.some((g) => g.state === 'Next'))
      throw conflict(hostId, 'a Next generation already exists');
    if (await fingerprintKnown(tx, cert.fingerprintSha256)) {
      throw new HostEnrollmentError('certificate-in-use', `host ${hostId}: certificate already registered`);
    }
    const generation = Math.max(0, ...generations.map((g) => g.generation)) + 1;
    await insertHostCertificate(
      tx,
      {
        hostId,
        generation,
        fingerprintSha256: cert.fingerprintSha256,
        state: 'Next',
        notBefore: cert.notBefore,
        notAfter: cert.notAfter,
      },
      now(),
    );
    return { generation };
  });
}

/**
 * Makes Next the Current generation. The old Current becomes Previous and keeps authenticating
 * until it is revoked; an older Previous is left as it is (each is revoked on its own).
 */
export async function promoteNext(
  db: Database,
  hostId: string,
  now: Clock = wallClock,
): Promise<{ generation: number; previous: number | null }> {
  return db.transaction(async (tx) => {
    const generations = await lockEnrolled(tx, hostId);
    const next = generations.find((g) => g.state === 'Next');
    if (next === undefined) throw conflict(hostId, 'no Next generation to promote');
    const current = generations.find((g) => g.state === 'Current');
    const at = now();
    if (current !== undefined) {
      const moved = await setCertificateState(
        tx,
        { hostId, generation: current.generation, from: 'Current', to: 'Previous' },
        at,
      );
      if (!moved) throw conflict(hostId, `generation ${current.generation} moved concurrently`);
    }
    const promoted = await setCertificateState(
      tx,
      { hostId, generation: next.generation, from: 'Next', to: 'Current' },
      at,
    );
    if (!promoted) throw conflict(hostId, `generation ${next.generation} moved concurrently`);
    return { generation: next.generation, previous: current?.generation ?? null };
  });
}

/**
 * Revokes exactly one generation; the others keep authenticating. Revoking an already revoked
 * generation changes nothing and answers `revoked: false`.
 */
export async function revokeGeneration(
  db: Database,
  hostId: string,
  generation: number,
  now: Clock = wallClock,
): Promise<{ revoked: boolean }> {
  return db.transaction(async (tx) => {
    const generations = await lockEnrolled(tx, hostId);
    const target = generations.find((g) => g.generation === generation);
    if (target === undefined) {
      throw new HostEnrollmentError(
        'certificate-generation-unknown',
        `host ${hostId} generation ${generation}`,
      );
    }
    if (target.state === 'Revoked') return { revoked: false };
    const moved = await setCertificateState(
      tx,
      { hostId, generation, from: target.state, to: 'Revoked' },
      now(),
    );
    if (!moved) throw conflict(hostId, `generation ${generation} moved concurrently`);
    return { revoked: true };
  });
}

export function listCertificates(db: Database, hostId: string): Promise<HostCertificateRow[]> {
  return readHostCertificates(db, hostId);
}

/** Answers only for non-revoked generations, inside their validity, of an Enrolled host. */
export function createPgHostCertificateDirectory(db: Database): HostCertificateDirectory {
  return {
    async lookup(fingerprint: string, now: Date) {
      const normalized = normalizeFingerprint(fingerprint);
      if (normalized === null) return null;
      return lookupCertificate(db, normalized, now);
    },
  };
}
