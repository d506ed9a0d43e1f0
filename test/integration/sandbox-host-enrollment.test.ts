// Sandbox-host enrollment and persisted trust on PostgreSQL (migration 0023), with certificates made
// at test start. Enrollment keeps only the evidence's digest and the verifier's outcome; refused
// evidence stays refused without asking the verifier again (also from a second pool, a "restart");
// certificate rotation overlaps, promotion keeps the old generation until it is revoked, and
// revocation is per generation; the control plane's trust is replaced atomically and a fresh load
// still refuses a retired version and keeps the epoch.
import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addNextCertificate,
  createPgHostCertificateDirectory,
  listCertificates,
  promoteNext,
  revokeGeneration,
} from '../../providers/sandbox-host/certificate-rotation.ts';
import type { HostCertificateDirectory } from '../../providers/sandbox-host/directory.ts';
import { HostEnrollmentError, TrustStoreError } from '../../providers/sandbox-host/enrollment-errors.ts';
import { enrollHost, type EnrollmentVerifier } from '../../providers/sandbox-host/enrollment.ts';
import { TrustReplacementError } from '../../providers/sandbox-host/errors.ts';
import {
  createLocalUnsafeVerifier,
  LOCAL_UNSAFE_PROFILE,
} from '../../providers/sandbox-host/local-unsafe-verifier.ts';
import {
  loadTrust,
  readTrustHistory,
  replaceTrustDurably,
} from '../../providers/sandbox-host/trust-store.ts';
import { trustedKey, type VerificationKey } from '../../providers/sandbox-host/trust.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import {
  createTestCertificateAuthority,
  type ClientCertificate,
  type TestCertificateAuthority,
} from '../support/tls-certificates.ts';

const TABLES = [
  'sandbox_hosts',
  'sandbox_host_result_keys',
  'sandbox_host_certificates',
  'sandbox_host_enrollment_decisions',
  'control_verification_trust',
  'control_verification_keys',
];

let handle: BackendHandle;
let db: Database;
let ca: TestCertificateAuthority;
let directory: HostCertificateDirectory;

beforeAll(async () => {
  handle = await openBackend('postgres');
  db = handle.db;
  await migrate(db);
  ca = await createTestCertificateAuthority('sandlot-enrollment-test-ca');
  directory = createPgHostCertificateDirectory(db);
}, 60_000);
afterAll(() => handle.close());

const resultKeyPem = () =>
  generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();

function evidenceOf(doc: Record<string, unknown>): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(doc));
}

/** The local verifier, counting its calls. */
function counting(inner: EnrollmentVerifier = createLocalUnsafeVerifier()) {
  const counter = { calls: 0 };
  const verifier: EnrollmentVerifier = {
    profile: inner.profile,
    verify(evidence) {
      counter.calls += 1;
      return inner.verify(evidence);
    },
  };
  return { verifier, counter };
}

/** Every row of the enrollment and trust tables, as JSON text. */
async function everyRow(q: Database): Promise<string> {
  const parts: string[] = [];
  for (const table of TABLES) {
    const { rows } = await q.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM ${table} t`);
    parts.push(...rows.map((r) => r.row));
  }
  return parts.join('\n');
}

const pemBody = (pem: string) => pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('enrollment', () => {
  let hostA: ClientCertificate;

  beforeAll(async () => {
    hostA = await ca.issueClient('host-a');
  });

  it('accepted evidence registers generation 1 and persists only its digest and outcome', async () => {
    const evidence = evidenceOf({
      hostId: 'host-a',
      certificatePem: hostA.certPem,
      resultPublicKeyPem: resultKeyPem(),
    });
    const { verifier, counter } = counting();
    const result = await enrollHost(db, evidence, verifier);
    expect(result).toEqual({
      outcome: 'accepted',
      hostId: 'host-a',
      generation: 1,
      evidenceSha256: sha256(evidence),
      replayed: false,
    });
    const { rows } = await db.query(
      'SELECT outcome, reason_code, verifier_profile, host_id FROM sandbox_host_enrollment_decisions WHERE evidence_sha256 = $1',
      [sha256(evidence)],
    );
    expect(rows).toEqual([
      { outcome: 'Accepted', reason_code: null, verifier_profile: LOCAL_UNSAFE_PROFILE, host_id: 'host-a' },
    ]);
    expect(await directory.lookup(hostA.fingerprint, new Date())).toEqual({
      hostId: 'host-a',
      generation: 1,
    });

    const stored = await everyRow(db);
    expect(stored).not.toContain(new TextDecoder().decode(evidence));
    expect(stored).not.toContain(pemBody(hostA.certPem).slice(0, 64));
    expect(stored).not.toContain(Buffer.from(evidence).toString('base64').slice(0, 64));

    const again = await enrollHost(db, evidence, verifier);
    expect(again).toMatchObject({ outcome: 'accepted', hostId: 'host-a', replayed: true });
    expect(counter.calls).toBe(1);
  });

  it('refused evidence is refused again durably, without calling the verifier', async () => {
    const mismatch = await ca.issueClient('host-x');
    const evidence = evidenceOf({
      hostId: 'host-b',
      certificatePem: mismatch.certPem,
      resultPublicKeyPem: resultKeyPem(),
    });
    const { verifier, counter } = counting();
    expect(await enrollHost(db, evidence, verifier)).toMatchObject({
      outcome: 'refused',
      reason: 'host-id-mismatch',
      replayed: false,
    });
    expect(counter.calls).toBe(1);
    // A second pool stands in for a restarted control plane.
    const restarted = handle.second();
    expect(await enrollHost(restarted, evidence, verifier)).toMatchObject({
      outcome: 'refused',
      reason: 'host-id-mismatch',
      replayed: true,
    });
    expect(counter.calls).toBe(1);
    const { rows } = await db.query('SELECT host_id FROM sandbox_hosts WHERE host_id = $1', ['host-b']);
    expect(rows).toEqual([]);
    expect(await directory.lookup(mismatch.fingerprint, new Date())).toBeNull();
    expect(await everyRow(db)).not.toContain(pemBody(mismatch.certPem).slice(0, 64));
  });

  it.each([
    ['not JSON', new TextEncoder().encode('not json at all'), 'evidence-malformed'],
    [
      'an unknown member',
      evidenceOf({ hostId: 'h', certificatePem: 'x', resultPublicKeyPem: 'y', extra: 1 }),
      'evidence-malformed',
    ],
    [
      'a certificate that does not parse',
      evidenceOf({ hostId: 'h', certificatePem: 'x', resultPublicKeyPem: 'y' }),
      'certificate-invalid',
    ],
  ])('evidence with %s is refused as %s', async (_name, evidence, reason) => {
    const { verifier } = counting();
    expect(await enrollHost(db, evidence, verifier)).toMatchObject({ outcome: 'refused', reason });
  });

  it('a result key that is not Ed25519 is refused', async () => {
    const cert = await ca.issueClient('host-c');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey;
    const evidence = evidenceOf({
      hostId: 'host-c',
      certificatePem: cert.certPem,
      resultPublicKeyPem: rsa.export({ type: 'spki', format: 'pem' }).toString(),
    });
    expect(await enrollHost(db, evidence, counting().verifier)).toMatchObject({
      outcome: 'refused',
      reason: 'result-key-invalid',
    });
  });

  it('a second enrollment of an enrolled host, or of a registered certificate, is refused', async () => {
    const other = await ca.issueClient('host-a');
    const sameHost = evidenceOf({
      hostId: 'host-a',
      certificatePem: other.certPem,
      resultPublicKeyPem: resultKeyPem(),
    });
    expect(await enrollHost(db, sameHost, counting().verifier)).toMatchObject({
      outcome: 'refused',
      reason: 'host-already-enrolled',
    });
    // A verifier that vouches for another host id with host-a's certificate.
    const permissive: EnrollmentVerifier = {
      profile: 'test-permissive',
      verify: () => ({
        accepted: true,
        hostId: 'host-z',
        certificatePem: hostA.certPem,
        resultPublicKeyPem: resultKeyPem(),
      }),
    };
    expect(await enrollHost(db, evidenceOf({ n: 1 }), permissive)).toMatchObject({
      outcome: 'refused',
      reason: 'certificate-in-use',
    });
    expect(await directory.lookup(hostA.fingerprint, new Date())).toEqual({
      hostId: 'host-a',
      generation: 1,
    });
  });

  it('a verifier that throws decides nothing: no decision is stored and the evidence may be retried', async () => {
    const evidence = evidenceOf({ attempt: 'transient' });
    const failing: EnrollmentVerifier = {
      profile: 'test-failing',
      verify: () => {
        throw new Error('attestation service unreachable');
      },
    };
    const error = await enrollHost(db, evidence, failing).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostEnrollmentError);
    expect((error as HostEnrollmentError).code).toBe('enrollment-verifier-failed');
    const { rows } = await db.query(
      'SELECT 1 FROM sandbox_host_enrollment_decisions WHERE evidence_sha256 = $1',
      [sha256(evidence)],
    );
    expect(rows).toEqual([]);
  });
});

describe('certificate rotation', () => {
  let gen1: ClientCertificate;
  let gen2: ClientCertificate;

  beforeAll(async () => {
    gen1 = await ca.issueClient('host-r');
    gen2 = await ca.issueClient('host-r');
    const evidence = evidenceOf({
      hostId: 'host-r',
      certificatePem: gen1.certPem,
      resultPublicKeyPem: resultKeyPem(),
    });
    expect(await enrollHost(db, evidence, counting().verifier)).toMatchObject({ outcome: 'accepted' });
  });

  it('overlaps, promotes and revokes one generation at a time', async () => {
    const now = new Date();
    expect(await addNextCertificate(db, 'host-r', gen2.certPem)).toEqual({ generation: 2 });
    expect(await directory.lookup(gen1.fingerprint, now)).toEqual({ hostId: 'host-r', generation: 1 });
    expect(await directory.lookup(gen2.fingerprint, now)).toEqual({ hostId: 'host-r', generation: 2 });

    const third = await ca.issueClient('host-r');
    await expect(addNextCertificate(db, 'host-r', third.certPem)).rejects.toMatchObject({
      code: 'certificate-rotation-conflict',
    });

    expect(await promoteNext(db, 'host-r')).toEqual({ generation: 2, previous: 1 });
    expect(await directory.lookup(gen1.fingerprint, now)).toEqual({ hostId: 'host-r', generation: 1 });
    expect(await directory.lookup(gen2.fingerprint, now)).toEqual({ hostId: 'host-r', generation: 2 });
    await expect(promoteNext(db, 'host-r')).rejects.toMatchObject({ code: 'certificate-rotation-conflict' });

    expect(await revokeGeneration(db, 'host-r', 1)).toEqual({ revoked: true });
    expect(await directory.lookup(gen1.fingerprint, now)).toBeNull();
    expect(await directory.lookup(gen2.fingerprint, now)).toEqual({ hostId: 'host-r', generation: 2 });
    expect(await revokeGeneration(db, 'host-r', 1)).toEqual({ revoked: false });
    await expect(revokeGeneration(db, 'host-r', 9)).rejects.toMatchObject({
      code: 'certificate-generation-unknown',
    });

    const states = (await listCertificates(db, 'host-r')).map((c) => [
      c.generation,
      c.state,
      c.revokedAt !== null,
    ]);
    expect(states).toEqual([
      [1, 'Revoked', true],
      [2, 'Current', false],
    ]);
  });

  it('answers null outside validity, for unknown or malformed fingerprints, and refuses a reused certificate', async () => {
    const later = new Date(Date.now() + 3 * 24 * 3600_000);
    expect(await directory.lookup(gen2.fingerprint, later)).toBeNull();
    expect(await directory.lookup('0'.repeat(64), new Date())).toBeNull();
    expect(await directory.lookup('not-a-fingerprint', new Date())).toBeNull();
    // The colon-separated upper-case form names the same certificate.
    const colons = gen2.fingerprint.toUpperCase().match(/../g)?.join(':') ?? '';
    expect(await directory.lookup(colons, new Date())).toEqual({ hostId: 'host-r', generation: 2 });
    await expect(addNextCertificate(db, 'host-r', gen1.certPem)).rejects.toMatchObject({
      code: 'certificate-in-use',
    });
    await expect(addNextCertificate(db, 'host-unknown', gen1.certPem)).rejects.toMatchObject({
      code: 'host-not-enrolled',
    });
  });
});

describe('verification trust', () => {
  const hour = 3600_000;
  const key = (version: number, publicKey: KeyObject): VerificationKey => ({
    version,
    publicKey,
    notBefore: new Date(Date.now() - hour).toISOString(),
    notAfter: new Date(Date.now() + 24 * hour).toISOString(),
  });
  const k1 = key(1, generateKeyPairSync('ed25519').publicKey);
  const k2 = key(2, generateKeyPairSync('ed25519').publicKey);
  const k3 = key(3, generateKeyPairSync('ed25519').publicKey);
  const replacedAt = new Date('2026-06-01T12:00:00.000Z');

  it('is replaced atomically and a fresh load after a restart still refuses the retired version', async () => {
    expect(await loadTrust(db)).toBeNull();
    await replaceTrustDurably(db, { current: k1, next: k2, revocationEpoch: 1 });
    const replaced = await replaceTrustDurably(
      db,
      { current: k2, next: k3, revocationEpoch: 2 },
      () => replacedAt,
    );
    expect(replaced.retiredVersions).toEqual([1]);

    const restarted = handle.second();
    const loaded = await loadTrust(restarted);
    expect(loaded).not.toBeNull();
    if (loaded === null) return;
    expect(loaded.current.version).toBe(2);
    expect(loaded.next?.version).toBe(3);
    expect(loaded.current.publicKey.equals(k2.publicKey)).toBe(true);
    expect(loaded.current.notBefore).toBe(k2.notBefore);
    expect(loaded.revocationEpoch).toBe(2);
    expect(loaded.retiredVersions).toEqual([1]);
    expect(trustedKey(loaded, 1)).toEqual({ found: false, reason: 'retired' });

    const history = await readTrustHistory(restarted);
    expect(history.map((k) => [k.keyVersion, k.role, k.retiredAt])).toEqual([
      [1, 'retired', replacedAt.toISOString()],
      [2, 'current', null],
      [3, 'next', null],
    ]);
    expect(history.every((k) => k.publicKeyPem.startsWith('-----BEGIN PUBLIC KEY-----'))).toBe(true);
    expect(await everyRow(db)).not.toContain('PRIVATE KEY');
  });

  it.each([
    [
      'a retired version returning below the current one',
      () => ({ current: k2, next: { ...k1 }, revocationEpoch: 2 }),
    ],
    ['the epoch going down', () => ({ current: k2, next: k3, revocationEpoch: 1 })],
    ['the current version going backwards', () => ({ current: k1, next: null, revocationEpoch: 2 })],
  ])('a replacement with %s is refused and writes nothing', async (_name, replacement) => {
    const before = await everyRow(db);
    const error = await replaceTrustDurably(handle.second(), replacement()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TrustReplacementError);
    expect(await everyRow(db)).toBe(before);
  });

  it('promotes next and retires the old current in one transaction, keeping the epoch', async () => {
    const trust = await replaceTrustDurably(db, { current: k3, next: null, revocationEpoch: 2 });
    expect(trust.retiredVersions).toEqual([1, 2]);
    const loaded = await loadTrust(handle.second());
    expect(loaded?.current.version).toBe(3);
    expect(loaded?.next).toBeNull();
    expect(loaded?.revocationEpoch).toBe(2);
    expect(loaded?.retiredVersions).toEqual([1, 2]);
    const { rows } = await db.query<{ role: string; n: string }>(
      'SELECT role, count(*)::text AS n FROM control_verification_keys GROUP BY role ORDER BY role',
    );
    expect(rows).toEqual([
      { role: 'current', n: '1' },
      { role: 'retired', n: '2' },
    ]);
  });

  it('a dropped next key stays retired after a restart and cannot come back', async () => {
    const k4 = key(4, generateKeyPairSync('ed25519').publicKey);
    await replaceTrustDurably(db, { current: k3, next: k4, revocationEpoch: 3 });
    await replaceTrustDurably(db, { current: k3, next: null, revocationEpoch: 3 });
    const restarted = handle.second();
    const loaded = await loadTrust(restarted);
    expect(loaded?.retiredVersions).toEqual([1, 2, 4]);
    expect(loaded?.revocationEpoch).toBe(3);
    const error = await replaceTrustDurably(restarted, { current: k3, next: k4, revocationEpoch: 3 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TrustReplacementError);
    expect((error as Error).message).toContain('key version 4 is retired');
  });

  it('a history that does not form a trust is reported, not repaired', async () => {
    await db.query(`UPDATE control_verification_keys SET role = 'next' WHERE key_version = 3`);
    const error = await loadTrust(db).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TrustStoreError);
    expect((error as TrustStoreError).code).toBe('trust-history-invalid');
    await db.query(`UPDATE control_verification_keys SET role = 'current' WHERE key_version = 3`);
    expect((await loadTrust(db))?.current.version).toBe(3);
  });
});
