// The embedded Core stand-in's tables (migrations/0012_core_build_test_stand_in.sql): seeds by
// content, accepted commands by checkpoint, admitted journal acknowledgments by operation. Every
// write inserts once and never updates: an identical write is `unchanged`, a different one a
// `conflict`. Values are stored as given; actors/build-test/core-embedded.ts parses what it reads.
import type { BuildTestCheckpointRef } from '../actors/ports.ts';
import type { Database, Queryable } from './db.ts';

export type PutResult = 'created' | 'unchanged' | 'conflict';

// Seeds travel as base64 text through decode()/encode(): PGlite binds a binary parameter about 15
// times slower, which a 64 MiB seed would feel. node-postgres is indifferent either way.
const base64 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64');

export async function putWorkspaceSeed(
  q: Queryable,
  seed: { tenantId: string; projectId: string; sha256: string; bytes: Uint8Array; createdBy: string },
): Promise<Exclude<PutResult, 'conflict'>> {
  const inserted = await q.query(
    `INSERT INTO core_workspace_seeds (tenant_id, project_id, seed_sha256, seed_length, seed, created_by)
     VALUES ($1, $2, $3, $4, decode($5, 'base64'), $6) ON CONFLICT DO NOTHING RETURNING seed_sha256`,
    [seed.tenantId, seed.projectId, seed.sha256, seed.bytes.length, base64(seed.bytes), seed.createdBy],
  );
  // Keyed by its SHA-256: a row under the same key holds the same bytes.
  return inserted.rowCount === 1 ? 'created' : 'unchanged';
}

export async function readWorkspaceSeed(
  q: Queryable,
  tenantId: string,
  projectId: string,
  sha256: string,
): Promise<Uint8Array | null> {
  const { rows } = await q.query<{ seed: string }>(
    `SELECT encode(seed, 'base64') AS seed FROM core_workspace_seeds
      WHERE tenant_id = $1 AND project_id = $2 AND seed_sha256 = $3`,
    [tenantId, projectId, sha256],
  );
  const text = rows[0]?.seed;
  // PostgreSQL breaks base64 into lines; Node's decoder skips the line breaks.
  return text === undefined ? null : Buffer.from(text, 'base64');
}

export interface AcceptedCommandRow {
  /** The command as written (jsonb): the reader parses it. */
  command: unknown;
  commandHash: string;
}

export interface NewAcceptedCommand {
  checkpoint: BuildTestCheckpointRef;
  operationId: string;
  version: 1 | 2;
  command: unknown;
  commandHash: string;
  seed: { sha256: string; length: number } | null;
  createdBy: string;
}

export type PutCommandResult = PutResult | 'seed-missing' | 'operation-taken';

const checkpointWhere = `tenant_id = $1 AND project_id = $2 AND run_id = $3 AND step_id = $4 AND checkpoint_id = $5`;
const checkpointParams = (c: BuildTestCheckpointRef) => [
  c.tenantId,
  c.projectId,
  c.runId,
  c.stepId,
  c.checkpointId,
];

export async function readAcceptedCommand(
  q: Queryable,
  checkpoint: BuildTestCheckpointRef,
): Promise<AcceptedCommandRow | null> {
  const { rows } = await q.query<AcceptedCommandRow>(
    `SELECT command, command_hash AS "commandHash" FROM core_accepted_commands WHERE ${checkpointWhere}`,
    checkpointParams(checkpoint),
  );
  return rows[0] ?? null;
}

export function putAcceptedCommand(db: Database, row: NewAcceptedCommand): Promise<PutCommandResult> {
  const { checkpoint: c, seed } = row;
  return db.transaction(async (tx) => {
    if (seed !== null) {
      const { rows } = await tx.query<{ length: number }>(
        `SELECT seed_length AS length FROM core_workspace_seeds
          WHERE tenant_id = $1 AND project_id = $2 AND seed_sha256 = $3`,
        [c.tenantId, c.projectId, seed.sha256],
      );
      if (rows[0]?.length !== seed.length) return 'seed-missing';
    }
    const inserted = await tx.query(
      `INSERT INTO core_accepted_commands (tenant_id, project_id, run_id, step_id, checkpoint_id, operation_id,
                                           version, command, command_hash, seed_sha256, seed_length, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING RETURNING operation_id`,
      [
        ...checkpointParams(c),
        row.operationId,
        row.version,
        JSON.stringify(row.command),
        row.commandHash,
        seed?.sha256 ?? null,
        seed?.length ?? null,
        row.createdBy,
      ],
    );
    if (inserted.rowCount === 1) return 'created';
    const stored = await readAcceptedCommand(tx, c);
    // Nothing under this checkpoint, so the operation ID is another checkpoint's.
    if (stored === null) return 'operation-taken';
    return stored.commandHash === row.commandHash ? 'unchanged' : 'conflict';
  });
}

export interface AdmissionRow {
  tenantId: string;
  acknowledgment: unknown;
  acknowledgmentHash: string;
}

export async function readAdmission(q: Queryable, operationId: string): Promise<AdmissionRow | null> {
  const { rows } = await q.query<AdmissionRow>(
    `SELECT c.tenant_id AS "tenantId", a.acknowledgment, a.acknowledgment_hash AS "acknowledgmentHash"
       FROM core_journal_admissions a JOIN core_accepted_commands c USING (operation_id)
      WHERE a.operation_id = $1`,
    [operationId],
  );
  return rows[0] ?? null;
}

export async function putAdmission(
  db: Database,
  row: { operationId: string; acknowledgment: unknown; acknowledgmentHash: string; createdBy: string },
): Promise<PutResult | 'unknown-operation'> {
  return db.transaction(async (tx) => {
    const known = await tx.query(`SELECT 1 FROM core_accepted_commands WHERE operation_id = $1`, [
      row.operationId,
    ]);
    if (known.rows.length === 0) return 'unknown-operation';
    const inserted = await tx.query(
      `INSERT INTO core_journal_admissions (operation_id, acknowledgment, acknowledgment_hash, created_by)
       VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING operation_id`,
      [row.operationId, JSON.stringify(row.acknowledgment), row.acknowledgmentHash, row.createdBy],
    );
    if (inserted.rowCount === 1) return 'created';
    const stored = await readAdmission(tx, row.operationId);
    return stored?.acknowledgmentHash === row.acknowledgmentHash ? 'unchanged' : 'conflict';
  });
}
