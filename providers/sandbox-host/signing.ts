// Ed25519 over canonical JSON, shared by the control-signed envelope and the host-signed result.
// What is signed is always the UTF-8 of canonicalJson(body): key order and whitespace cannot make
// two encodings of one body, so the signed bytes and the digests the protocol binds are one thing.
// Signatures travel as unpadded base64url, and only the canonical spelling of the 64 bytes is
// accepted, so an exact duplicate on the wire is an exact duplicate in bytes.
import { type KeyObject, sign, verify } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';

export const PROTOCOL = 'sandbox.host-control/v1';

/** An Ed25519 signature is 64 bytes: 86 unpadded base64url characters. */
export const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{86}$/;
export const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/;

export function isEd25519Key(key: KeyObject, type: 'public' | 'private'): boolean {
  return key.type === type && key.asymmetricKeyType === 'ed25519';
}

export function signCanonical(body: unknown, privateKey: KeyObject): string {
  return sign(null, Buffer.from(canonicalJson(body), 'utf8'), privateKey).toString('base64url');
}

/** False for a wrong signature or a non-canonical spelling of a right one; never throws on input. */
export function verifyCanonical(body: unknown, signature: string, publicKey: KeyObject): boolean {
  if (!SIGNATURE_PATTERN.test(signature)) return false;
  const bytes = Buffer.from(signature, 'base64url');
  if (bytes.length !== 64 || bytes.toString('base64url') !== signature) return false;
  return verify(null, Buffer.from(canonicalJson(body), 'utf8'), publicKey, bytes);
}

/** True when the base64url text is the one canonical spelling of its bytes. */
export function isCanonicalBase64url(text: string): boolean {
  return /^[A-Za-z0-9_-]*$/.test(text) && Buffer.from(text, 'base64url').toString('base64url') === text;
}

/** The digest a JSON document is bound by: SHA-256 of its canonical JSON. */
export function documentDigest(document: unknown): string {
  return sha256Hex(canonicalJson(document));
}

/**
 * Whether a value is plain JSON (what survives a JSON round trip unchanged): null, booleans, finite
 * numbers, strings, arrays and plain objects of those. `undefined` members are refused, not dropped.
 */
export function isPlainJson(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isPlainJson);
  if (typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value).every(isPlainJson);
}

/** A canonical ISO instant: `new Date(text).toISOString()` gives back exactly the text. */
export function isCanonicalInstant(text: string): boolean {
  const ms = Date.parse(text);
  return Number.isFinite(ms) && new Date(ms).toISOString() === text;
}

/** Deep-freezes a freshly built JSON-like value so no holder can change a state another holds. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}
