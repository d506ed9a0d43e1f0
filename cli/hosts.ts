// `sandlot hosts trust | enroll | list`: the control plane's side of the sandbox-host fleet, run by
// an operator against the database the other admin commands open (PostgreSQL with DATABASE_URL,
// otherwise the embedded data directory while no `sandlot serve` has it open). Invariants: no
// output carries key material (trust prints versions and validity, enrollment the evidence's
// digest only); a usage mistake is a UsageError (exit 2), anything the database refuses exit 1.
import { createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Database } from '../store/db.ts';
import { listCertificates } from '../providers/sandbox-host/certificate-rotation.ts';
import { enrollHost } from '../providers/sandbox-host/enrollment.ts';
import {
  LOCAL_UNSAFE_PROFILE,
  localUnsafeVerifier,
} from '../providers/sandbox-host/local-unsafe-verifier.ts';
import { isEd25519Key } from '../providers/sandbox-host/signing.ts';
import { readTrustHistory, replaceTrustDurably } from '../providers/sandbox-host/trust-store.ts';
import type { VerificationKey, VerificationTrust } from '../providers/sandbox-host/trust.ts';
import { readHosts, type HostCertificateRow, type HostRow } from '../store/sandbox-hosts.ts';
import { configFromEnvironment, openDatabase } from './context.ts';
import { refuseWhileServing } from './journal-reader.ts';
import { UsageError } from './usage.ts';

type Out = (text: string) => void;

export interface HostsDeps {
  /** A database to use as it is (tests); otherwise the configured one is opened and closed. */
  db?: Database;
  out?: Out;
}

const MAX_EVIDENCE_BYTES = 64 * 1024 + 1;
const MISSING_TABLE = '42P01';

async function withDatabase<T>(deps: HostsDeps, work: (db: Database) => Promise<T>): Promise<T> {
  const run = async (db: Database) => {
    try {
      return await work(db);
    } catch (error) {
      if ((error as { code?: unknown }).code === MISSING_TABLE) {
        throw new Error('the database has no sandbox-host tables: run `sandlot migrate` first', {
          cause: error,
        });
      }
      throw error;
    }
  };
  if (deps.db !== undefined) return run(deps.db);
  const config = configFromEnvironment();
  await refuseWhileServing(config);
  const db = await openDatabase(config);
  try {
    return await run(db);
  } finally {
    await db.close();
  }
}

async function readBounded(flag: string, path: string, max: number): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new Error(`${flag}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (bytes.length > max) throw new Error(`${flag}: ${path} exceeds ${max} bytes`);
  return bytes;
}

// ---- trust ----

export interface TrustOptions {
  publicKey: string;
  version: string;
  notBefore: string;
  notAfter: string;
  nextPublicKey?: string;
  nextVersion?: string;
  nextNotBefore?: string;
  nextNotAfter?: string;
  epoch: string;
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function positive(flag: string, value: string): number {
  if (!/^[1-9]\d{0,8}$/.test(value.trim())) throw new UsageError(`${flag}: expected a positive integer`);
  return Number(value.trim());
}

/** An ISO 8601 instant with a zone, in its canonical spelling (what trust rows store). */
function instant(flag: string, value: string): string {
  const t = Date.parse(value.trim());
  if (!ISO_INSTANT.test(value.trim()) || Number.isNaN(t)) {
    throw new UsageError(`${flag}: expected an ISO 8601 instant with a zone, e.g. 2026-01-01T00:00:00Z`);
  }
  return new Date(t).toISOString();
}

async function publicKeyFrom(flag: string, path: string) {
  const text = (await readBounded(flag, path, 64 * 1024)).toString('utf8');
  try {
    const key = createPublicKey(text);
    if (isEd25519Key(key, 'public')) return key;
  } catch {
    // Reported below, without the file's contents.
  }
  throw new Error(`${flag}: ${path} is not an Ed25519 public key (SPKI PEM)`);
}

async function verificationKey(
  flags: { key: string; version: string; notBefore: string; notAfter: string },
  values: { key: string; version: string; notBefore: string; notAfter: string },
): Promise<VerificationKey> {
  const version = positive(flags.version, values.version);
  const notBefore = instant(flags.notBefore, values.notBefore);
  const notAfter = instant(flags.notAfter, values.notAfter);
  return { version, publicKey: await publicKeyFrom(flags.key, values.key), notBefore, notAfter };
}

const describeKey = (role: string, key: VerificationKey | null) =>
  key === null
    ? `  ${role}: none`
    : `  ${role}: version ${key.version}, valid ${key.notBefore} to ${key.notAfter}`;

/** Establishes or replaces the control plane's verification trust; prints versions, never keys. */
export async function trustHosts(options: TrustOptions, deps: HostsDeps = {}): Promise<VerificationTrust> {
  const out = deps.out ?? ((text: string) => process.stdout.write(text));
  const epoch = positive('--epoch', options.epoch);
  const current = await verificationKey(
    { key: '--public-key', version: '--version', notBefore: '--not-before', notAfter: '--not-after' },
    {
      key: options.publicKey,
      version: options.version,
      notBefore: options.notBefore,
      notAfter: options.notAfter,
    },
  );
  const nextParts = [options.nextPublicKey, options.nextVersion, options.nextNotBefore, options.nextNotAfter];
  const given = nextParts.filter((part) => part !== undefined).length;
  if (given !== 0 && given !== 4) {
    throw new UsageError(
      '--next-public-key, --next-version, --next-not-before and --next-not-after go together',
    );
  }
  const next =
    given === 0
      ? null
      : await verificationKey(
          {
            key: '--next-public-key',
            version: '--next-version',
            notBefore: '--next-not-before',
            notAfter: '--next-not-after',
          },
          {
            key: options.nextPublicKey ?? '',
            version: options.nextVersion ?? '',
            notBefore: options.nextNotBefore ?? '',
            notAfter: options.nextNotAfter ?? '',
          },
        );
  return withDatabase(deps, async (db) => {
    const trust = await replaceTrustDurably(db, { current, next, revocationEpoch: epoch });
    const history = await readTrustHistory(db);
    const retired = history.filter((k) => k.role === 'retired').map((k) => k.keyVersion);
    out(
      [
        `control verification trust set (revocation epoch ${trust.revocationEpoch})`,
        describeKey('current', trust.current),
        describeKey('next', trust.next),
        `  retired versions: ${retired.length === 0 ? 'none' : retired.join(', ')}`,
        "hosts verify envelopes only against the trust in their own declarations: update each host's `trust`",
        '',
      ].join('\n'),
    );
    return trust;
  });
}

// ---- enroll ----

/** The evidence was decided, and refused (exit 1 after the decision is printed). */
export class EnrollmentRefusedError extends Error {
  override readonly name = 'EnrollmentRefusedError';
}

export const LOCAL_PROFILE_NOTICE =
  `profile ${LOCAL_UNSAFE_PROFILE}: verifies metadata only (certificate CN = host id, clientAuth, ` +
  'validity, an Ed25519 result key); it is NOT hardware attestation and proves nothing about the host';

/** Enrolls a host from a local-unsafe evidence document; prints the decision and the digest. */
export async function enrollHostFromFile(
  options: { evidence: string },
  deps: HostsDeps = {},
): Promise<Awaited<ReturnType<typeof enrollHost>>> {
  const out = deps.out ?? ((text: string) => process.stdout.write(text));
  const evidence = await readBounded('--evidence', options.evidence, MAX_EVIDENCE_BYTES);
  return withDatabase(deps, async (db) => {
    const result = await enrollHost(db, new Uint8Array(evidence), localUnsafeVerifier);
    const lines =
      result.outcome === 'accepted'
        ? [`outcome: accepted`, `host: ${result.hostId}`, `certificate generation: ${result.generation}`]
        : [`outcome: refused (${result.reason})`];
    out(
      [
        ...lines,
        `evidence sha256: ${result.evidenceSha256}`,
        `decided before: ${result.replayed ? 'yes (the stored decision, the verifier was not asked)' : 'no'}`,
        LOCAL_PROFILE_NOTICE,
        '',
      ].join('\n'),
    );
    if (result.outcome === 'refused')
      throw new EnrollmentRefusedError(`enrollment refused: ${result.reason}`);
    return result;
  });
}

// ---- list ----

export interface HostListing extends HostRow {
  certificates: Array<Omit<HostCertificateRow, 'hostId' | 'fingerprintSha256'> & { fingerprint: string }>;
}

/** Every host with its state and certificate generations (fingerprints shortened to 16 hex). */
export async function listHosts(options: { json?: boolean }, deps: HostsDeps = {}): Promise<HostListing[]> {
  const out = deps.out ?? ((text: string) => process.stdout.write(text));
  return withDatabase(deps, async (db) => {
    const rows = await readHosts(db);
    const hosts: HostListing[] = [];
    for (const row of rows) {
      const certificates = (await listCertificates(db, row.hostId)).map(
        ({ hostId: _host, fingerprintSha256, ...rest }) => ({
          ...rest,
          fingerprint: fingerprintSha256.slice(0, 16),
        }),
      );
      hosts.push({ ...row, certificates });
    }
    out(options.json === true ? `${JSON.stringify(hosts, null, 2)}\n` : hostsTable(hosts));
    return hosts;
  });
}

function hostsTable(hosts: readonly HostListing[]): string {
  if (hosts.length === 0) return 'no hosts enrolled\n';
  const rows = hosts.map((h) => [
    h.hostId,
    h.state,
    h.enrolledAt,
    h.certificates.map((c) => `${c.generation}:${c.state} until ${c.notAfter}`).join(', ') || '-',
  ]);
  const header = ['HOST', 'STATE', 'ENROLLED', 'CERTIFICATES (generation:state)'];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}
