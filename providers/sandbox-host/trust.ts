// Verification trust: which control-plane keys a host accepts envelopes from. Invariant: a trust is
// an immutable value, and replacing current/next is one call that returns a whole new trust or
// throws, so no reader ever sees a current without its next, or a new key with the old epoch.
// During a rotation overlap both current and next verify; a version dropped by a replacement joins
// `retiredVersions` and can never come back. That lineage lives in this value only: persisting it
// (with authenticated history, so a restart cannot resurrect a retired key) is a later piece.
import type { KeyObject } from 'node:crypto';
import { TrustReplacementError } from './errors.ts';
import { isCanonicalInstant, isEd25519Key } from './signing.ts';

export interface VerificationKey {
  readonly version: number;
  readonly publicKey: KeyObject;
  /** Canonical ISO instants: the key verifies from notBefore (inclusive) to notAfter (exclusive). */
  readonly notBefore: string;
  readonly notAfter: string;
}

export interface VerificationTrust {
  readonly current: VerificationKey;
  /** The key the control plane rotates to; absent outside a rotation. */
  readonly next: VerificationKey | null;
  /** Envelopes carrying a lower epoch are revoked; a higher one means this trust is behind. */
  readonly revocationEpoch: number;
  /** Every version a replacement dropped, ascending; none of them verifies again. */
  readonly retiredVersions: readonly number[];
}

export interface TrustReplacement {
  current: VerificationKey;
  next: VerificationKey | null;
  revocationEpoch: number;
}

function checkKey(role: string, key: VerificationKey): void {
  if (!Number.isSafeInteger(key.version) || key.version <= 0) {
    throw new TrustReplacementError(`${role} key version must be a positive integer`);
  }
  if (!isEd25519Key(key.publicKey, 'public')) {
    throw new TrustReplacementError(`${role} key (version ${key.version}) is not an Ed25519 public key`);
  }
  if (!isCanonicalInstant(key.notBefore) || !isCanonicalInstant(key.notAfter)) {
    throw new TrustReplacementError(`${role} key (version ${key.version}) validity is not canonical ISO`);
  }
  if (Date.parse(key.notBefore) >= Date.parse(key.notAfter)) {
    throw new TrustReplacementError(`${role} key (version ${key.version}) notBefore is not before notAfter`);
  }
}

function freezeKey(key: VerificationKey): VerificationKey {
  return Object.freeze({
    version: key.version,
    publicKey: key.publicKey,
    notBefore: key.notBefore,
    notAfter: key.notAfter,
  });
}

function checkShape(replacement: TrustReplacement): void {
  checkKey('current', replacement.current);
  if (replacement.next !== null) {
    checkKey('next', replacement.next);
    if (replacement.next.version <= replacement.current.version) {
      throw new TrustReplacementError('next key version must be above the current one');
    }
  }
  if (!Number.isSafeInteger(replacement.revocationEpoch) || replacement.revocationEpoch <= 0) {
    throw new TrustReplacementError('revocation epoch must be a positive integer');
  }
}

function build(replacement: TrustReplacement, retiredVersions: readonly number[]): VerificationTrust {
  return Object.freeze({
    current: freezeKey(replacement.current),
    next: replacement.next === null ? null : freezeKey(replacement.next),
    revocationEpoch: replacement.revocationEpoch,
    retiredVersions: Object.freeze([...retiredVersions]),
  });
}

/** A host's first trust, from its enrollment. */
export function createTrust(initial: TrustReplacement): VerificationTrust {
  checkShape(initial);
  return build(initial, []);
}

/**
 * Replaces current and next together. Refused (the old trust stands) when a version goes backwards,
 * a retired version reappears, a kept version changes its key or validity, or the epoch decreases.
 */
export function replaceTrust(trust: VerificationTrust, replacement: TrustReplacement): VerificationTrust {
  checkShape(replacement);
  if (replacement.current.version < trust.current.version) {
    throw new TrustReplacementError('current key version would go backwards');
  }
  if (replacement.revocationEpoch < trust.revocationEpoch) {
    throw new TrustReplacementError('revocation epoch would go backwards');
  }
  const incoming = [replacement.current, replacement.next].filter((k): k is VerificationKey => k !== null);
  const outgoing = [trust.current, trust.next].filter((k): k is VerificationKey => k !== null);
  for (const key of incoming) {
    if (trust.retiredVersions.includes(key.version)) {
      throw new TrustReplacementError(`key version ${key.version} is retired`);
    }
    const kept = outgoing.find((k) => k.version === key.version);
    if (
      kept !== undefined &&
      (!kept.publicKey.equals(key.publicKey) ||
        kept.notBefore !== key.notBefore ||
        kept.notAfter !== key.notAfter)
    ) {
      throw new TrustReplacementError(`key version ${key.version} cannot change its key or validity`);
    }
  }
  const dropped = outgoing
    .filter((k) => !incoming.some((i) => i.version === k.version))
    .map((k) => k.version);
  const retired = [...trust.retiredVersions, ...dropped].sort((a, b) => a - b);
  return build(replacement, retired);
}

export type KeyLookup =
  { found: true; key: VerificationKey } | { found: false; reason: 'retired' | 'never-trusted' };

/** The trusted key with this version, current or next; validity is judged by the caller. */
export function trustedKey(trust: VerificationTrust, version: number): KeyLookup {
  for (const key of [trust.current, trust.next]) {
    if (key !== null && key.version === version) return { found: true, key };
  }
  return { found: false, reason: trust.retiredVersions.includes(version) ? 'retired' : 'never-trusted' };
}

/** Whether `now` lies in [notBefore, notAfter). */
export function keyValidAt(key: VerificationKey, now: Date): boolean {
  const t = now.getTime();
  return Date.parse(key.notBefore) <= t && t < Date.parse(key.notAfter);
}
