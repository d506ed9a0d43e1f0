// Assignment envelopes: the control plane signs one already-authorized operation for one host, and
// the host verifies it before any effect. This file is the whole decision, pure: the caller passes
// the trust, the host's acceptance state and the time, and gets back a verdict with the next state
// to persist. Order matters and is fixed: shape, binding, exact duplicate (replay, answered from
// the journal even once the envelope has expired or its key retired, since it causes no new
// effect), then key, signature, key validity, epoch, altered duplicate and sequence: a refusal
// there never changes the state and consumes no sequence number. An envelope that passes all of
// those is authentic and exactly next, so the two checks after them (expiry, then the fence of a
// mutating kind) decline it instead: the verdict carries the next state, consuming the sequence
// without raising any fence, and the host answers it with a signed refusal and runs no effect.
import type { KeyObject } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { acceptedAt, type AcceptanceState, highestFence, withAccepted } from './acceptance-state.ts';
import {
  type EnvelopeBody,
  envelopeBodySchema,
  type EnvelopeWire,
  envelopeWireSchema,
  firstIssue,
  isMutatingKind,
  legacyBindingPath,
  looseWireSchema,
  type OperationKind,
} from './envelope-schema.ts';
import {
  type AnsweredRefusalCode,
  type EnvelopeRefusalCode,
  EnvelopeRefusedError,
  EnvelopeSigningError,
} from './errors.ts';
import type { HostResultWire } from './host-result.ts';
import { documentDigest, isEd25519Key, PROTOCOL, signCanonical, verifyCanonical } from './signing.ts';
import { keyValidAt, trustedKey, type VerificationTrust } from './trust.ts';

export type { EnvelopeBody, EnvelopeWire, OperationKind };

/** What the control plane fills in; the protocol and the documents' digests are derived. */
export interface EnvelopeInput {
  tenantId: string;
  principal: { subject: string };
  operation: { id: string; kind: OperationKind };
  effectiveSpec: Record<string, unknown>;
  capabilitySnapshot: Record<string, unknown>;
  lease: { environmentId: string; operationId: string; resourceGeneration: number };
  fence: { providerFence: number };
  hostId: string;
  sequence: number;
  issuedAt: Date;
  expiresAt: Date;
  revocationEpoch: number;
}

export interface EnvelopeSigner {
  version: number;
  privateKey: KeyObject;
}

/** Builds, checks and signs an envelope; a legacy binding or a malformed body is never signed. */
export function signEnvelope(input: EnvelopeInput, signer: EnvelopeSigner): EnvelopeWire {
  if (!isEd25519Key(signer.privateKey, 'private')) {
    throw new EnvelopeSigningError('the control signing key is not an Ed25519 private key');
  }
  const candidate = {
    protocol: PROTOCOL,
    tenantId: input.tenantId,
    principal: { subject: input.principal.subject },
    operation: { id: input.operation.id, kind: input.operation.kind },
    effectiveSpec: { document: input.effectiveSpec, sha256: documentDigest(input.effectiveSpec) },
    capabilitySnapshot: {
      document: input.capabilitySnapshot,
      sha256: documentDigest(input.capabilitySnapshot),
    },
    lease: { ...input.lease },
    fence: { providerFence: input.fence.providerFence },
    hostId: input.hostId,
    sequence: input.sequence,
    issuedAt: input.issuedAt.toISOString(),
    expiresAt: input.expiresAt.toISOString(),
    signingKeyVersion: signer.version,
    revocationEpoch: input.revocationEpoch,
  };
  const legacy = legacyBindingPath(candidate, signer.version);
  if (legacy !== undefined) throw new EnvelopeSigningError(`legacy or zero binding at ${legacy}`);
  const parsed = envelopeBodySchema.safeParse(candidate);
  if (!parsed.success) throw new EnvelopeSigningError(`envelope body ${firstIssue(parsed.error)}`);
  // The signature covers the canonical JSON of the body exactly as it will travel (parsed: a copy).
  const body = JSON.parse(canonicalJson(parsed.data)) as EnvelopeBody;
  return { body, signature: signCanonical(body, signer.privateKey), keyVersion: signer.version };
}

/** The digest results and the journal bind to: SHA-256 of the canonical JSON of the whole wire. */
export function envelopeDigest(wire: EnvelopeWire): string {
  return sha256Hex(canonicalJson(wire));
}

export interface EnvelopeExpectation {
  /** The host doing the verifying: an envelope for another host is refused. */
  hostId: string;
  /** What this host has accepted so far (persisted by the caller, passed back in). */
  state: AcceptanceState;
}

export type EnvelopeVerdict =
  | { verdict: 'accepted'; body: EnvelopeBody; envelopeDigest: string; state: AcceptanceState }
  | {
      verdict: 'replay';
      code: 'replay';
      body: EnvelopeBody;
      envelopeDigest: string;
      /** The journaled result; null when the host accepted it but recorded no result (uncertain). */
      result: HostResultWire | null;
      state: AcceptanceState;
    }
  | {
      /**
       * Authentic and exactly next, but refused (expired, or a stale fence): `state` consumes the
       * sequence and raises no fence; the host journals it with a signed refusal and no effect.
       */
      verdict: 'declined';
      code: Extract<AnsweredRefusalCode, EnvelopeRefusalCode>;
      error: EnvelopeRefusedError;
      body: EnvelopeBody;
      envelopeDigest: string;
      state: AcceptanceState;
    }
  | { verdict: 'refused'; code: EnvelopeRefusalCode; error: EnvelopeRefusedError; state: AcceptanceState };

/**
 * Verifies one envelope as received (any JSON value) at `now`. Never throws on input: every
 * refusal is a verdict with a stable code, and only an accepted or declined verdict carries a new
 * state.
 */
export function verifyEnvelope(
  wire: unknown,
  trust: VerificationTrust,
  expectation: EnvelopeExpectation,
  now: Date,
): EnvelopeVerdict {
  const { state } = expectation;
  const refuse = (code: EnvelopeRefusalCode, message: string): EnvelopeVerdict => ({
    verdict: 'refused',
    code,
    error: new EnvelopeRefusedError(code, message),
    state,
  });

  const loose = looseWireSchema.safeParse(wire);
  if (!loose.success) return refuse('malformed', firstIssue(loose.error));
  const legacy = legacyBindingPath(loose.data.body, loose.data.keyVersion);
  if (legacy !== undefined) return refuse('legacy-binding', `${legacy} is missing or zero`);
  const parsed = envelopeWireSchema.safeParse(wire);
  if (!parsed.success) return refuse('malformed', firstIssue(parsed.error));
  const envelope = parsed.data;
  const { body } = envelope;
  if (envelope.keyVersion !== body.signingKeyVersion) {
    return refuse('malformed', 'keyVersion differs from body.signingKeyVersion');
  }

  const digest = envelopeDigest(envelope);
  const prior = acceptedAt(state, body.sequence);
  if (prior !== undefined && prior.envelopeDigest === digest) {
    return { verdict: 'replay', code: 'replay', body, envelopeDigest: digest, result: prior.result, state };
  }

  if (body.hostId !== expectation.hostId) return refuse('wrong-host', 'hostId names another host');
  const lookup = trustedKey(trust, envelope.keyVersion);
  if (!lookup.found) {
    const why = lookup.reason === 'retired' ? 'has been retired' : 'is not trusted';
    return refuse('key-unknown', `signing key version ${envelope.keyVersion} ${why}`);
  }
  if (!verifyCanonical(body, envelope.signature, lookup.key.publicKey)) {
    return refuse('signature-invalid', `signature does not verify under key version ${lookup.key.version}`);
  }
  if (!keyValidAt(lookup.key, now)) {
    return refuse('key-expired', `signing key version ${lookup.key.version} is outside its validity`);
  }
  if (body.revocationEpoch < trust.revocationEpoch) {
    return refuse('epoch-revoked', `epoch ${body.revocationEpoch} is below ${trust.revocationEpoch}`);
  }
  if (body.revocationEpoch > trust.revocationEpoch) {
    return refuse('epoch-unknown', `epoch ${body.revocationEpoch} is above ${trust.revocationEpoch}`);
  }
  if (prior !== undefined) {
    return refuse('altered-duplicate', `sequence ${body.sequence} was accepted with other bytes`);
  }
  if (body.sequence !== state.lastSequence + 1) {
    return refuse('sequence-gap', `sequence ${body.sequence} where ${state.lastSequence + 1} was due`);
  }

  const entry = {
    envelopeDigest: digest,
    operationId: body.operation.id,
    environmentId: body.lease.environmentId,
    providerFence: body.fence.providerFence,
  };
  const decline = (code: 'expired' | 'stale-fence', message: string): EnvelopeVerdict => ({
    verdict: 'declined',
    code,
    error: new EnvelopeRefusedError(code, message),
    body,
    envelopeDigest: digest,
    state: withAccepted(state, { ...entry, raisesFence: false }),
  });
  if (now.getTime() >= Date.parse(body.expiresAt)) return decline('expired', 'expiresAt has passed');
  const mutating = isMutatingKind(body.operation.kind);
  const highest = highestFence(state, body.lease.environmentId);
  if (mutating && body.fence.providerFence < highest) {
    return decline('stale-fence', `fence ${body.fence.providerFence} is below ${highest} for the lease`);
  }

  const next = withAccepted(state, { ...entry, raisesFence: mutating });
  return { verdict: 'accepted', body, envelopeDigest: digest, state: next };
}
