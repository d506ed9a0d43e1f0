// A host's acceptance state: everything envelope verification must remember between envelopes.
// Invariants: sequences are accepted exactly in order 1, 2, …, so `accepted` holds every sequence
// up to `lastSequence`; each accepted sequence keeps the digest of its exact envelope (an exact
// duplicate is answered from here, an altered one refused) and, once the host has one, its signed
// result; `fences` holds the highest provider fence accepted per Environment by a mutating
// operation (provision, renew, release). The state is a plain immutable JSON value passed in and
// returned, never held here, so a journal can persist it and a restarted host parses it back with
// `parseAcceptanceState` and replays exactly.
import { z } from 'zod';
import { HostResultRefusedError } from './errors.ts';
import { hostResultWireSchema, type HostResultWire } from './host-result.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { deepFreeze, SHA256_HEX_PATTERN } from './signing.ts';

const positive = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

const acceptedSchema = z.strictObject({
  sequence: positive,
  envelopeDigest: z.string().regex(SHA256_HEX_PATTERN),
  operationId: z.string().min(1),
  /** Null until the host records its result: a started intent with no result is uncertain. */
  result: hostResultWireSchema.nullable(),
});
export type AcceptedEnvelope = z.infer<typeof acceptedSchema>;

export const acceptanceStateSchema = z
  .strictObject({
    lastSequence: z.number().int().nonnegative(),
    accepted: z.array(acceptedSchema),
    fences: z.array(z.strictObject({ environmentId: z.string().min(1), providerFence: positive })),
  })
  .refine(
    (state) =>
      state.accepted.length === state.lastSequence &&
      state.accepted.every((entry, i) => entry.sequence === i + 1),
    'accepted holds sequences 1..lastSequence in order',
  )
  .refine(
    (state) => new Set(state.fences.map((f) => f.environmentId)).size === state.fences.length,
    'one fence per environment',
  );
export type AcceptanceState = z.infer<typeof acceptanceStateSchema>;

/** A newly enrolled host has accepted nothing. */
export function emptyAcceptanceState(): AcceptanceState {
  return deepFreeze({ lastSequence: 0, accepted: [], fences: [] });
}

/** Reads a persisted state back (from JSON text or a parsed value); throws a ZodError when invalid. */
export function parseAcceptanceState(persisted: unknown): AcceptanceState {
  const value: unknown = typeof persisted === 'string' ? JSON.parse(persisted) : persisted;
  return deepFreeze(acceptanceStateSchema.parse(value));
}

export function acceptedAt(state: AcceptanceState, sequence: number): AcceptedEnvelope | undefined {
  return state.accepted[sequence - 1];
}

/** The highest fence accepted for this Environment, or 0 when none was. */
export function highestFence(state: AcceptanceState, environmentId: string): number {
  return state.fences.find((f) => f.environmentId === environmentId)?.providerFence ?? 0;
}

/**
 * The state after accepting one envelope at lastSequence + 1 (the caller has checked it all).
 * `raisesFence` is false for a read (describe, listOwned) and for an envelope the host declined:
 * neither changes anything, so neither moves the Environment's fence.
 */
export function withAccepted(
  state: AcceptanceState,
  entry: {
    envelopeDigest: string;
    operationId: string;
    environmentId: string;
    providerFence: number;
    raisesFence: boolean;
  },
): AcceptanceState {
  const sequence = state.lastSequence + 1;
  const accepted = [
    ...state.accepted,
    { sequence, envelopeDigest: entry.envelopeDigest, operationId: entry.operationId, result: null },
  ];
  if (!entry.raisesFence) return deepFreeze({ lastSequence: sequence, accepted, fences: state.fences });
  const others = state.fences.filter((f) => f.environmentId !== entry.environmentId);
  const fence = Math.max(highestFence(state, entry.environmentId), entry.providerFence);
  return deepFreeze({
    lastSequence: sequence,
    accepted,
    fences: [...others, { environmentId: entry.environmentId, providerFence: fence }].sort((a, b) =>
      a.environmentId < b.environmentId ? -1 : a.environmentId > b.environmentId ? 1 : 0,
    ),
  });
}

/**
 * Records the host's signed result for an accepted envelope. Recording the identical result again
 * changes nothing; a different one is refused (a result, once journaled, is what replay returns).
 */
export function recordResult(
  state: AcceptanceState,
  sequence: number,
  result: HostResultWire,
): AcceptanceState {
  const entry = acceptedAt(state, sequence);
  if (entry === undefined) {
    throw new HostResultRefusedError('result-binding-mismatch', `sequence ${sequence} was never accepted`);
  }
  if (result.body.envelopeDigest !== entry.envelopeDigest || result.body.operationId !== entry.operationId) {
    throw new HostResultRefusedError('result-binding-mismatch', `result is not for sequence ${sequence}`);
  }
  if (entry.result !== null) {
    if (canonicalJson(entry.result) === canonicalJson(result)) return state;
    throw new HostResultRefusedError('result-conflict', `sequence ${sequence} already has another result`);
  }
  const copy = hostResultWireSchema.parse(JSON.parse(canonicalJson(result)));
  return deepFreeze({
    ...state,
    accepted: state.accepted.map((e) => (e.sequence === sequence ? { ...e, result: copy } : e)),
  });
}
