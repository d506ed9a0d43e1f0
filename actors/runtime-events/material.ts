// Events' protected material as data: the acknowledgment Environment saved for the acknowledged
// server configuration of a resume (which session and event hold it, its private object reference,
// the SHA-256 and length of its bytes), and the material Events answers for it. The acknowledgment
// is a strict zod schema: nothing else names the bytes, and the bytes answered must be exactly the
// ones it names (actors/runtime-events/material-checks.ts). The object reference is private: it
// appears in no log line, no public event and no error message.
import { z } from 'zod';

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/);

/**
 * The largest material Events may answer, in bytes: a saved server configuration (credential-free
 * text). It equals the API's body limit (lib/limits.ts), so the embedded admin route can store any
 * material the port may answer without an exception to that limit.
 */
export const MAX_PROTECTED_MATERIAL_BYTES = 256 * 1024;

export const configurationAcknowledgmentSchema = z.strictObject({
  /** The session whose event holds the configuration; the current registration must carry it. */
  sessionId: id,
  eventId: id,
  /** Events' private reference to the stored object (never shown in public event streams). */
  objectReference: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$/),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** Exactly the number of bytes; an empty configuration is no saved configuration. */
  length: z.number().int().min(1).max(MAX_PROTECTED_MATERIAL_BYTES),
});
export type ConfigurationAcknowledgment = z.infer<typeof configurationAcknowledgmentSchema>;

/** What Events answered: exactly the acknowledged bytes, with the acknowledgment they match. */
export interface ProtectedMaterial {
  acknowledgment: ConfigurationAcknowledgment;
  bytes: Uint8Array;
}
