// The checks both RuntimeEvents implementations make the same way, so the embedded stand-in and
// the HTTP adapter cannot drift apart: an aborted call or an expired bearer is never sent, a bearer
// an Authorization header could not carry as it is (RFC 6750 b64token) is a denied actor, the
// acknowledgment asked with is well formed, and the bytes answered have exactly its length and
// SHA-256 (one byte short, one byte long and a different digest are all refused, never used).
import { createHash } from 'node:crypto';
import type { EventsActor } from './ports.ts';
import { EventsAnswerRefusedError, EventsDeniedError, EventsUnavailableError } from './errors.ts';
import {
  configurationAcknowledgmentSchema,
  type ConfigurationAcknowledgment,
  type ProtectedMaterial,
} from './material.ts';

const BEARER = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Refuses an aborted call, an expired actor and a bearer no header could carry, before asking. */
export function admitEventsCall(actor: EventsActor, signal: AbortSignal, now: Date): void {
  if (signal.aborted) throw new EventsUnavailableError('aborted', 'the call was aborted');
  if (!(actor.expiresAt.getTime() > now.getTime())) throw new EventsDeniedError('bearer-expired');
  if (!BEARER.test(actor.bearer)) throw new EventsDeniedError('denied');
}

/** The acknowledgment as the caller holds it, parsed strictly (a caller's bug, not Events' answer). */
export function parseAcknowledgment(value: ConfigurationAcknowledgment): ConfigurationAcknowledgment {
  const parsed = configurationAcknowledgmentSchema.safeParse(value);
  if (!parsed.success) throw new TypeError('the configuration acknowledgment is malformed');
  return parsed.data;
}

/** The material, once its bytes are exactly the acknowledged length and SHA-256. */
export function acceptMaterial(
  acknowledgment: ConfigurationAcknowledgment,
  bytes: Uint8Array,
): ProtectedMaterial {
  if (bytes.length !== acknowledgment.length) {
    const which = bytes.length < acknowledgment.length ? 'shorter' : 'longer';
    throw new EventsAnswerRefusedError('material-mismatch', `the material is ${which} than acknowledged`);
  }
  if (createHash('sha256').update(bytes).digest('hex') !== acknowledgment.sha256) {
    throw new EventsAnswerRefusedError(
      'material-mismatch',
      'the material does not match its acknowledged SHA-256',
    );
  }
  return { acknowledgment, bytes };
}
