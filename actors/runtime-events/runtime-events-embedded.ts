// The embedded RuntimeEvents: stands in for Events' protected material route from our own table
// (store/runtime-events-stand-in.ts) where no Events service is configured. It answers what an
// operator stored through the embedded admin route (http/routes/admin-runtime-events.ts). As Events
// does, it hands out bytes only after current Core and registration checks: it authorizes by tenant
// only (as the RuntimeCore stand-in does; another tenant's step reads as none), and the step's
// current Runtime registration (core_runtime_registrations) must carry the acknowledged session.
// Its answer goes through the same length and SHA-256 check as the HTTP adapter's.
import { createHash } from 'node:crypto';
import type { Database } from '../../store/db.ts';
import { readCurrentRegistration } from '../../store/runtime-core-stand-in.ts';
import {
  putMaterial,
  readMaterial,
  type MaterialKey,
  type PutMaterialResult,
} from '../../store/runtime-events-stand-in.ts';
import { runtimeStepRefSchema, type RuntimeStepRef } from '../runtime-core/runtime-operation.ts';
import { acceptMaterial, admitEventsCall, parseAcknowledgment } from './material-checks.ts';
import { MAX_PROTECTED_MATERIAL_BYTES, type ConfigurationAcknowledgment } from './material.ts';
import type { EventsActor, ProtectedMaterial, RuntimeEvents } from './ports.ts';

export class EmbeddedRuntimeEvents implements RuntimeEvents {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async readProtectedMaterial(
    actor: EventsActor,
    ref: RuntimeStepRef,
    acknowledgment: ConfigurationAcknowledgment,
    signal: AbortSignal,
  ): Promise<ProtectedMaterial | null> {
    admitEventsCall(actor, signal, this.now());
    const held = parseAcknowledgment(acknowledgment);
    const bytes = await heldProtectedMaterial(this.db, actor, { ref, ...keyOf(held) });
    return bytes === null ? null : acceptMaterial(held, bytes);
  }
}

/**
 * The bytes Events holds under `key`, as its protected route would answer them: null unless the
 * actor's tenant owns the step and the step's current Runtime registration carries the session.
 * Unchecked against any acknowledgment (the stand-in Events server answers these bytes as they are).
 */
export async function heldProtectedMaterial(
  db: Database,
  actor: Pick<EventsActor, 'tenantId'>,
  key: MaterialKey,
): Promise<Uint8Array | null> {
  if (actor.tenantId !== key.ref.tenantId) return null;
  const registration = await readCurrentRegistration(db, key.ref);
  if (registration === null || registration.sessionId !== key.sessionId) return null;
  return (await readMaterial(db, key))?.bytes ?? null;
}

export type StoreMaterialOutcome = { result: PutMaterialResult; acknowledgment: ConfigurationAcknowledgment };

/** Stores a material once, as Events would keep it, and answers the acknowledgment naming it. */
export async function storeProtectedMaterial(
  db: Database,
  key: MaterialKey,
  bytes: Uint8Array,
  createdBy: string,
): Promise<StoreMaterialOutcome> {
  if (bytes.length < 1 || bytes.length > MAX_PROTECTED_MATERIAL_BYTES) {
    throw new RangeError(`a material holds 1 to ${MAX_PROTECTED_MATERIAL_BYTES} bytes`);
  }
  const ref = runtimeStepRefSchema.parse(key.ref);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const acknowledgment = parseAcknowledgment({ ...keyOf(key), sha256, length: bytes.length });
  const result = await putMaterial(db, { ...key, ref }, { sha256, bytes, createdBy });
  return { result, acknowledgment };
}

const keyOf = (k: { sessionId: string; eventId: string; objectReference: string }) => ({
  sessionId: k.sessionId,
  eventId: k.eventId,
  objectReference: k.objectReference,
});
