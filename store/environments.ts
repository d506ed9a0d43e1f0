// Row access for Environment actors. Writers hold the Environment's advisory lock (lockEnvironment)
// for the whole transaction; the revision compare-and-swap in updateEnvironmentSnapshot is the
// second line of defence against a lost update. The hot path is two statements: lock-and-read
// (lockAndReadEnvironment), then one commit statement (commitRevision) for the CAS, the journal
// row, the outbox rows and the change notification.
import { prepared, type Queryable } from './db.ts';
import type { JournalSource } from './journal.ts';
import { outboxColumns, type OutboxRow } from './outbox.ts';

export interface EnvironmentRow {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
  runSelectionHash: string;
  machineVersion: number;
  snapshot: unknown;
  revision: number;
  lifecycleState: string;
  lifecycleGeneration: number;
  quarantinedAt: Date | null;
  quarantineReason: string | null;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What an operator's list filters on (migration 0031), written with every snapshot. */
export interface ListingProjection {
  sandboxState: string | null;
  leaseExpiresAt: string | null;
  unresolvedAttempts: number;
  openCleanups: number;
}

const noListing: ListingProjection = {
  sandboxState: null,
  leaseExpiresAt: null,
  unresolvedAttempts: 0,
  openCleanups: 0,
};

const columns = `environment_id AS "environmentId", tenant_id AS "tenantId", project_id AS "projectId",
  run_id AS "runId", idempotency_key AS "idempotencyKey", run_selection_hash AS "runSelectionHash",
  machine_version AS "machineVersion", snapshot, revision::int AS revision,
  lifecycle_state AS "lifecycleState", lifecycle_generation AS "lifecycleGeneration",
  quarantined_at AS "quarantinedAt", quarantine_reason AS "quarantineReason",
  created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt"`;

export async function lockEnvironment(tx: Queryable, environmentId: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`environment:${environmentId}`]);
}

const lockAndRead = prepared('sandlot_lock_environment', `SELECT ${columns} FROM lock_environment($1)`);

/**
 * The advisory lock, then the row as the lock holder before us left it, in one round trip (the
 * function reads under a snapshot taken after the lock is held: migrations/0011).
 */
export async function lockAndReadEnvironment(
  tx: Queryable,
  environmentId: string,
): Promise<EnvironmentRow | null> {
  const { rows } = await tx.query<EnvironmentRow>(lockAndRead, [environmentId]);
  return rows[0] ?? null;
}

export async function readEnvironment(q: Queryable, environmentId: string): Promise<EnvironmentRow | null> {
  const { rows } = await q.query<EnvironmentRow>(
    `SELECT ${columns} FROM environments WHERE environment_id = $1`,
    [environmentId],
  );
  return rows[0] ?? null;
}

export interface NewEnvironment {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
  runSelectionHash: string;
  machineVersion: number;
  snapshot: unknown;
  lifecycleState: string;
  lifecycleGeneration: number;
  listing?: ListingProjection;
  createdBy: string;
}

/** Inserts at revision 1; returns null when the row already exists. */
export async function insertEnvironment(tx: Queryable, env: NewEnvironment): Promise<EnvironmentRow | null> {
  const { rows } = await tx.query<EnvironmentRow>(
    `INSERT INTO environments (environment_id, tenant_id, project_id, run_id, idempotency_key,
       run_selection_hash, machine_version, snapshot, revision, lifecycle_state, lifecycle_generation, created_by,
       sandbox_state, lease_expires_at, unresolved_attempts, open_cleanups)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT DO NOTHING
     RETURNING ${columns}`,
    [
      env.environmentId,
      env.tenantId,
      env.projectId,
      env.runId,
      env.idempotencyKey,
      env.runSelectionHash,
      env.machineVersion,
      JSON.stringify(env.snapshot),
      env.lifecycleState,
      env.lifecycleGeneration,
      env.createdBy,
      ...listingValues(env.listing),
    ],
  );
  return rows[0] ?? null;
}

export interface SnapshotUpdate {
  environmentId: string;
  expectedRevision: number;
  machineVersion: number;
  snapshot: unknown;
  lifecycleState: string;
  lifecycleGeneration: number;
  listing?: ListingProjection;
}

function listingValues(listing: ListingProjection = noListing) {
  return [listing.sandboxState, listing.leaseExpiresAt, listing.unresolvedAttempts, listing.openCleanups];
}

/** Compare-and-swap on revision; returns null when another writer got there first. */
export async function updateEnvironmentSnapshot(
  tx: Queryable,
  update: SnapshotUpdate,
): Promise<EnvironmentRow | null> {
  const { rows } = await tx.query<EnvironmentRow>(
    `UPDATE environments
        SET snapshot = $3, machine_version = $4, lifecycle_state = $5, lifecycle_generation = $6,
            sandbox_state = $7, lease_expires_at = $8, unresolved_attempts = $9, open_cleanups = $10,
            revision = revision + 1, updated_at = now()
      WHERE environment_id = $1 AND revision = $2
      RETURNING ${columns}`,
    [
      update.environmentId,
      update.expectedRevision,
      JSON.stringify(update.snapshot),
      update.machineVersion,
      update.lifecycleState,
      update.lifecycleGeneration,
      ...listingValues(update.listing),
    ],
  );
  return rows[0] ?? null;
}

export async function quarantineEnvironment(
  tx: Queryable,
  environmentId: string,
  reason: string,
): Promise<void> {
  await tx.query(
    `UPDATE environments SET quarantined_at = COALESCE(quarantined_at, now()), quarantine_reason = $2
      WHERE environment_id = $1`,
    [environmentId, reason],
  );
}

export interface RevisionJournal {
  eventType: string;
  event: unknown;
  fromState: unknown;
  toState: unknown;
  actor: string;
  source: JournalSource;
}

export type NewEffect = Pick<OutboxRow, 'kind' | 'payload' | 'attemptId'> & { traceContext?: string | null };

const commitStatement = prepared(
  'sandlot_commit_revision',
  `WITH updated AS (
     UPDATE environments
        SET snapshot = $3::jsonb, machine_version = $4::int, lifecycle_state = $5::text,
            lifecycle_generation = $6::int, sandbox_state = $14::text, lease_expires_at = $15::timestamptz,
            unresolved_attempts = $16::int, open_cleanups = $17::int, revision = revision + 1,
            updated_at = now()
      WHERE environment_id = $1::text AND revision = $2::bigint
      RETURNING *
   ), journal AS (
     INSERT INTO environment_journal
       (environment_id, revision, event_type, event, from_state, to_state, actor, source)
     SELECT environment_id, revision, $7::text, $8::jsonb, $9::jsonb, $10::jsonb, $11::text, $12::text
       FROM updated
   ), effects AS (
     INSERT INTO outbox (environment_id, revision, kind, payload, attempt_id, trace_context)
     SELECT u.environment_id, u.revision, e.value->>'kind', e.value->'payload', e.value->>'attemptId',
            e.value->>'traceContext'
       FROM updated u, jsonb_array_elements($13::jsonb) WITH ORDINALITY AS e (value, ord)
      ORDER BY e.ord
     RETURNING ${outboxColumns}
   )
   SELECT ${columns},
          (SELECT coalesce(jsonb_agg(to_jsonb(effects) ORDER BY "outboxId"), '[]'::jsonb) FROM effects)
            AS "effects"
     FROM updated`,
);

/**
 * One statement for a new revision: the compare-and-swap on revision, its journal row, its outbox
 * rows in declared order. Returns null (nothing written) when
 * another writer got there first.
 */
export async function commitRevision(
  tx: Queryable,
  update: SnapshotUpdate,
  journal: RevisionJournal,
  effects: readonly NewEffect[],
): Promise<{ row: EnvironmentRow; effects: OutboxRow[] } | null> {
  const { rows } = await tx.query<EnvironmentRow & { effects: OutboxRow[] | string }>(commitStatement, [
    update.environmentId,
    update.expectedRevision,
    JSON.stringify(update.snapshot),
    update.machineVersion,
    update.lifecycleState,
    update.lifecycleGeneration,
    journal.eventType,
    JSON.stringify(journal.event),
    journal.fromState === null ? null : JSON.stringify(journal.fromState),
    JSON.stringify(journal.toState),
    journal.actor,
    journal.source,
    JSON.stringify(
      effects.map((e) => ({
        kind: e.kind,
        payload: e.payload,
        attemptId: e.attemptId,
        traceContext: e.traceContext ?? null,
      })),
    ),
    ...listingValues(update.listing),
  ]);
  const found = rows[0];
  if (found === undefined) return null;
  const { effects: written, ...row } = found;
  const list = typeof written === 'string' ? (JSON.parse(written) as OutboxRow[]) : written;
  return { row, effects: list };
}

/** The current revision of each of these Environments (absent ones are left out). */
export async function readRevisions(
  q: Queryable,
  environmentIds: readonly string[],
): Promise<{ environmentId: string; revision: number }[]> {
  const { rows } = await q.query<{ environmentId: string; revision: number }>(
    `SELECT environment_id AS "environmentId", revision::int AS revision
       FROM environments WHERE environment_id = ANY($1::text[])`,
    [environmentIds],
  );
  return rows;
}
