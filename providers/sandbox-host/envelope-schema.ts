// The assignment envelope's body and wire shapes. Every field that binds the envelope to one
// authorized operation (tenant, principal, operation, spec and capability digests, lease, fence,
// host, sequence, expiry, signing-key version, revocation epoch) must be present and non-zero: a
// body from before the binding existed, or one built with defaults, is a "legacy binding" and is
// refused on its own code before the strict schema, so an operator can tell it from a typo.
import { z } from 'zod';
import {
  documentDigest,
  isCanonicalInstant,
  isPlainJson,
  PROTOCOL,
  SHA256_HEX_PATTERN,
  SIGNATURE_PATTERN,
} from './signing.ts';

export const OPERATION_KINDS = ['provision', 'renew', 'describe', 'release', 'listOwned'] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];

/**
 * The kinds that change a lease's resources. Only these are fenced: their provider fence must not
 * fall below the highest accepted for the Environment, and only they raise it. Reads (`describe`,
 * `listOwned`) change nothing, so their fence neither locks out nor is checked.
 */
export const MUTATING_KINDS = ['provision', 'renew', 'release'] as const satisfies readonly OperationKind[];

export function isMutatingKind(kind: OperationKind): boolean {
  return (MUTATING_KINDS as readonly OperationKind[]).includes(kind);
}

const id = z.string().min(1).max(256);
const positive = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const sha256 = z.string().regex(SHA256_HEX_PATTERN);
const instant = z.string().refine(isCanonicalInstant, 'a canonical ISO instant (toISOString)');
const jsonObject = z
  .record(z.string(), z.unknown())
  .refine(isPlainJson, 'plain JSON: no undefined, functions or non-finite numbers');

/** An opaque JSON document with the digest that binds it; the digest must match the document. */
const sealedDocument = z
  .strictObject({ document: jsonObject, sha256 })
  .refine((sealed) => documentDigest(sealed.document) === sealed.sha256, 'sha256 of the canonical document');

export const envelopeBodySchema = z
  .strictObject({
    protocol: z.literal(PROTOCOL),
    tenantId: id,
    principal: z.strictObject({ subject: id }),
    operation: z.strictObject({ id, kind: z.enum(OPERATION_KINDS) }),
    effectiveSpec: sealedDocument,
    capabilitySnapshot: sealedDocument,
    lease: z.strictObject({ environmentId: id, operationId: id, resourceGeneration: positive }),
    fence: z.strictObject({ providerFence: positive }),
    hostId: id,
    sequence: positive,
    issuedAt: instant,
    expiresAt: instant,
    signingKeyVersion: positive,
    revocationEpoch: positive,
  })
  .refine((body) => Date.parse(body.issuedAt) < Date.parse(body.expiresAt), {
    message: 'issuedAt before expiresAt',
    path: ['expiresAt'],
  });
export type EnvelopeBody = z.infer<typeof envelopeBodySchema>;

/** A signed document as it travels: the body, its Ed25519 signature, and the signing key's version. */
export const signedWireSchema = <B extends z.ZodType>(body: B) =>
  z.strictObject({ body, signature: z.string().regex(SIGNATURE_PATTERN), keyVersion: positive });

export const envelopeWireSchema = signedWireSchema(envelopeBodySchema);
export type EnvelopeWire = z.infer<typeof envelopeWireSchema>;

/** The wire's outer shape only, so binding fields can be judged before the strict parse. */
export const looseWireSchema = z.strictObject({
  body: z.record(z.string(), z.unknown()),
  signature: z.unknown().optional(),
  keyVersion: z.unknown().optional(),
});

/** Paths that must carry a binding: a missing, empty, zero or negative value is legacy. */
const BINDING_PATHS: readonly (readonly string[])[] = [
  ['tenantId'],
  ['principal', 'subject'],
  ['operation', 'id'],
  ['effectiveSpec', 'sha256'],
  ['capabilitySnapshot', 'sha256'],
  ['lease', 'environmentId'],
  ['lease', 'operationId'],
  ['lease', 'resourceGeneration'],
  ['fence', 'providerFence'],
  ['hostId'],
  ['sequence'],
  ['expiresAt'],
  ['signingKeyVersion'],
  ['revocationEpoch'],
];

function at(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function isZeroBinding(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === 'number') return value <= 0;
  if (typeof value === 'string') return value.trim() === '' || /^0{64}$/.test(value);
  return false;
}

/**
 * The first binding path that is missing or zero (dotted, e.g. `fence.providerFence`), with the
 * wire's own key version checked as `keyVersion`; undefined when every binding is present.
 */
export function legacyBindingPath(body: Record<string, unknown>, keyVersion: unknown): string | undefined {
  for (const path of BINDING_PATHS) {
    if (isZeroBinding(at(body, path))) return path.join('.');
  }
  return isZeroBinding(keyVersion) ? 'keyVersion' : undefined;
}

/** The first zod issue as `path: message`, for a refusal message that names no values. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid';
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}
