// The embedded RuntimeEvents stand-in's table (migrations/0019_events_protected_material_stand_in.sql):
// protected material by step, session, event and private object reference. A material inserts
// once and is never updated: the same bytes again are `unchanged`, other bytes under the same key a
// `conflict`. Values are stored as given; actors/runtime-events/ checks what it reads.
import type { RuntimeStepRef } from '../actors/ports.ts';
import type { Database, Queryable } from './db.ts';

export type PutMaterialResult = 'created' | 'unchanged' | 'conflict';

/** Where a material is kept: the Environment run step, then the event that holds it. */
export interface MaterialKey {
  ref: RuntimeStepRef;
  sessionId: string;
  eventId: string;
  objectReference: string;
}

export interface MaterialRow {
  sha256: string;
  length: number;
  bytes: Uint8Array;
}

const keyWhere = `tenant_id = $1 AND project_id = $2 AND run_id = $3 AND step_id = $4
  AND environment_id = $5 AND session_id = $6 AND event_id = $7 AND object_reference = $8`;
const keyParams = ({ ref, sessionId, eventId, objectReference }: MaterialKey) => [
  ref.tenantId,
  ref.projectId,
  ref.runId,
  ref.stepId,
  ref.environmentId,
  sessionId,
  eventId,
  objectReference,
];

// Bytes travel as base64 text through decode()/encode(), as seeds do (store/core-stand-in.ts).
const base64 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64');

export async function readMaterial(q: Queryable, key: MaterialKey): Promise<MaterialRow | null> {
  const { rows } = await q.query<{ sha256: string; length: number; bytes: string }>(
    `SELECT sha256, length, encode(bytes, 'base64') AS bytes FROM events_protected_material WHERE ${keyWhere}`,
    keyParams(key),
  );
  const row = rows[0];
  // PostgreSQL breaks base64 into lines; Node's decoder skips the line breaks.
  return row === undefined
    ? null
    : { sha256: row.sha256, length: row.length, bytes: Buffer.from(row.bytes, 'base64') };
}

/** Stores a material once; the caller computed `sha256` over `bytes`. */
export function putMaterial(
  db: Database,
  key: MaterialKey,
  material: { sha256: string; bytes: Uint8Array; createdBy: string },
): Promise<PutMaterialResult> {
  return db.transaction(async (tx) => {
    const inserted = await tx.query(
      `INSERT INTO events_protected_material (tenant_id, project_id, run_id, step_id, environment_id,
                                              session_id, event_id, object_reference, sha256, length,
                                              bytes, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, decode($11, 'base64'), $12)
       ON CONFLICT DO NOTHING RETURNING sha256`,
      [...keyParams(key), material.sha256, material.bytes.length, base64(material.bytes), material.createdBy],
    );
    if (inserted.rowCount === 1) return 'created';
    const stored = await readMaterial(tx, key);
    return stored !== null && stored.sha256 === material.sha256 && stored.length === material.bytes.length
      ? 'unchanged'
      : 'conflict';
  });
}
