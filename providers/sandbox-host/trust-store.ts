// The control plane's verification trust, persisted (migration 0023) so its retirement lineage
// survives a restart. Invariants: a replacement is judged by trust.ts's `replaceTrust` against the
// trust loaded inside the same transaction (trust row locked FOR UPDATE, revision compared and set),
// and every row it touches (dropped keys retired with the time, a next promoted, new keys inserted,
// the epoch) commits together or not at all, so no reader ever sees half a pair. A retired key row
// never changes role again and its version is the table's primary key, so a fresh `loadTrust` after
// a restart still lists it as retired and `replaceTrust` still refuses to bring it back.
// Limit: the history is authenticated only by PostgreSQL's access control (who may write these
// tables); rows are not signed, so a database writer could rewrite them.
import { createPublicKey } from 'node:crypto';
import type { Database, Queryable } from '../../store/db.ts';
import {
  insertTrustKey,
  insertTrustRow,
  readTrustKeys,
  readTrustRow,
  setTrustKeyRole,
  updateTrustRow,
  type TrustKeyRow,
  type TrustKeyRole,
} from '../../store/sandbox-hosts.ts';
import { TrustStoreError } from './enrollment-errors.ts';
import {
  createTrust,
  replaceTrust,
  type TrustReplacement,
  type VerificationKey,
  type VerificationTrust,
} from './trust.ts';

export type { TrustKeyRow };

function keyOf(row: TrustKeyRow): VerificationKey {
  let publicKey;
  try {
    publicKey = createPublicKey(row.publicKeyPem);
  } catch {
    throw new TrustStoreError('trust-history-invalid', `key version ${row.keyVersion} does not parse`);
  }
  return { version: row.keyVersion, publicKey, notBefore: row.notBefore, notAfter: row.notAfter };
}

async function loadIn(
  q: Queryable,
  lock: 'share' | 'update',
): Promise<{ trust: VerificationTrust; revision: number } | null> {
  const row = await readTrustRow(q, lock);
  const keys = await readTrustKeys(q);
  if (row === null) {
    if (keys.length > 0) throw new TrustStoreError('trust-history-invalid', 'keys stored without a trust');
    return null;
  }
  const current = keys.filter((k) => k.role === 'current');
  const next = keys.filter((k) => k.role === 'next');
  const currentRow = current[0];
  if (currentRow === undefined || current.length > 1 || next.length > 1) {
    throw new TrustStoreError('trust-history-invalid', 'not exactly one current and at most one next key');
  }
  let base: VerificationTrust;
  try {
    base = createTrust({
      current: keyOf(currentRow),
      next: next[0] === undefined ? null : keyOf(next[0]),
      revocationEpoch: row.revocationEpoch,
    });
  } catch (cause) {
    if (cause instanceof TrustStoreError) throw cause;
    throw new TrustStoreError('trust-history-invalid', 'stored current/next do not form a trust');
  }
  const retired = keys.filter((k) => k.role === 'retired').map((k) => k.keyVersion);
  const trust = Object.freeze({ ...base, retiredVersions: Object.freeze(retired.sort((a, b) => a - b)) });
  return { trust, revision: row.revision };
}

/** The persisted trust with its retired versions; null before the first `replaceTrustDurably`. */
export async function loadTrust(db: Database): Promise<VerificationTrust | null> {
  const loaded = await db.transaction((tx) => loadIn(tx, 'share'));
  return loaded?.trust ?? null;
}

/** Every key version ever trusted, with its role and when it was retired: the audit lineage. */
export function readTrustHistory(db: Database): Promise<TrustKeyRow[]> {
  return readTrustKeys(db);
}

const pemOf = (key: VerificationKey) => key.publicKey.export({ type: 'spki', format: 'pem' }).toString();

/**
 * Establishes the first trust, or replaces current/next and the epoch in one transaction. Throws
 * `trust-replacement-refused` (and writes nothing) when trust.ts refuses the replacement.
 */
export async function replaceTrustDurably(
  db: Database,
  replacement: TrustReplacement,
  now: () => Date = () => new Date(),
): Promise<VerificationTrust> {
  return db.transaction(async (tx) => {
    const at = now();
    const loaded = await loadIn(tx, 'update');
    if (loaded === null) {
      const trust = createTrust(replacement);
      if (!(await insertTrustRow(tx, trust.revocationEpoch, at))) {
        throw new TrustStoreError('trust-replacement-raced', 'the first trust was established concurrently');
      }
      for (const [role, key] of roles(trust)) await insertKey(tx, role, key, at);
      return trust;
    }

    const before = loaded.trust;
    const after = replaceTrust(before, replacement);
    const oldRoles = new Map(roles(before).map(([role, key]) => [key.version, role]));
    const newRoles = new Map(roles(after).map(([role, key]) => [key.version, role]));
    // Retire first, then move kept keys, then insert: the one-current/one-next indexes hold after
    // every statement.
    for (const [version, role] of oldRoles) {
      if (!newRoles.has(version)) await move(tx, version, role, 'retired', at);
    }
    for (const [version, role] of newRoles) {
      const was = oldRoles.get(version);
      if (was !== undefined && was !== role) await move(tx, version, was, role, at);
    }
    for (const [role, key] of roles(after)) {
      if (!oldRoles.has(key.version)) await insertKey(tx, role, key, at);
    }
    if (!(await updateTrustRow(tx, loaded.revision, after.revocationEpoch, at))) {
      throw new TrustStoreError(
        'trust-replacement-raced',
        `trust revision ${loaded.revision} moved concurrently`,
      );
    }
    return after;
  });
}

/** One trust key row, as the key stands in the trust with this role. */
function insertKey(
  tx: Queryable,
  role: Exclude<TrustKeyRole, 'retired'>,
  key: VerificationKey,
  at: Date,
): Promise<void> {
  return insertTrustKey(
    tx,
    {
      keyVersion: key.version,
      publicKeyPem: pemOf(key),
      notBefore: key.notBefore,
      notAfter: key.notAfter,
      role,
    },
    at,
  );
}

function roles(trust: VerificationTrust): Array<[Exclude<TrustKeyRole, 'retired'>, VerificationKey]> {
  return trust.next === null
    ? [['current', trust.current]]
    : [
        ['current', trust.current],
        ['next', trust.next],
      ];
}

async function move(
  tx: Queryable,
  version: number,
  from: TrustKeyRole,
  to: TrustKeyRole,
  at: Date,
): Promise<void> {
  if (!(await setTrustKeyRole(tx, version, from, to, at))) {
    throw new TrustStoreError('trust-replacement-raced', `key version ${version} moved concurrently`);
  }
}
