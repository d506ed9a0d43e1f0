// The embedded RuntimeCore stand-in's tables (migrations/0017_core_runtime_stand_in.sql): suspend
// and resume operations by operation ID, and Runtime registrations by generation. Terms, saved
// evidence and registrations insert once (an identical write is `unchanged`, a different one a
// `conflict`); an operation's state moves only by compare-and-set on its state revision, along the
// moves `allowedMoves` lists. Values are stored as given; actors/runtime-core/ parses what it reads.
import type { RuntimeStepRef } from '../actors/ports.ts';
import type { Database, Queryable } from './db.ts';

export type PutResult = 'created' | 'unchanged' | 'conflict';

const stepWhere = `tenant_id = $1 AND project_id = $2 AND run_id = $3 AND step_id = $4 AND environment_id = $5`;
const stepParams = (r: RuntimeStepRef) => [r.tenantId, r.projectId, r.runId, r.stepId, r.environmentId];

export interface RuntimeOperationRow {
  ref: RuntimeStepRef;
  operationId: string;
  terms: unknown;
  termsHash: string;
  state: string;
  stateRevision: number;
  savedEvidence: unknown;
  savedEvidenceHash: string | null;
}

const operationColumns = `
  json_build_object('tenantId', tenant_id, 'projectId', project_id, 'runId', run_id,
                    'stepId', step_id, 'environmentId', environment_id) AS ref,
  operation_id AS "operationId", terms, terms_hash AS "termsHash", state,
  state_revision AS "stateRevision", saved_evidence AS "savedEvidence",
  saved_evidence_hash AS "savedEvidenceHash"`;

/** The step's one operation in a current state (Reserved, Fenced or Committed), or null. */
export async function readCurrentOperation(
  q: Queryable,
  ref: RuntimeStepRef,
): Promise<RuntimeOperationRow | null> {
  const { rows } = await q.query<RuntimeOperationRow>(
    `SELECT ${operationColumns} FROM core_runtime_operations
      WHERE ${stepWhere} AND state IN ('reserved', 'fenced', 'committed')`,
    stepParams(ref),
  );
  return rows[0] ?? null;
}

export async function readOperation(q: Queryable, operationId: string): Promise<RuntimeOperationRow | null> {
  const { rows } = await q.query<RuntimeOperationRow>(
    `SELECT ${operationColumns} FROM core_runtime_operations WHERE operation_id = $1`,
    [operationId],
  );
  return rows[0] ?? null;
}

export type PutOperationResult = PutResult | 'step-busy';

/** Reserves an operation; `step-busy` when the step already has another current operation. */
export function putOperation(
  db: Database,
  row: {
    ref: RuntimeStepRef;
    operationId: string;
    kind: string;
    terms: unknown;
    termsHash: string;
    createdBy: string;
  },
): Promise<PutOperationResult> {
  return db.transaction(async (tx) => {
    const stored = await readOperation(tx, row.operationId);
    if (stored !== null) {
      const same =
        stored.termsHash === row.termsHash &&
        stepParams(stored.ref).join('\n') === stepParams(row.ref).join('\n');
      return same ? 'unchanged' : 'conflict';
    }
    if ((await readCurrentOperation(tx, row.ref)) !== null) return 'step-busy';
    // A concurrent reservation of the same step loses on the partial unique index: a conflict.
    const inserted = await tx.query(
      `INSERT INTO core_runtime_operations (tenant_id, project_id, run_id, step_id, environment_id,
                                            operation_id, kind, terms, terms_hash, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING RETURNING operation_id`,
      [
        ...stepParams(row.ref),
        row.operationId,
        row.kind,
        JSON.stringify(row.terms),
        row.termsHash,
        row.createdBy,
      ],
    );
    return inserted.rowCount === 1 ? 'created' : 'conflict';
  });
}

export type PutEvidenceResult = PutResult | 'unknown-operation' | 'not-current';

/** Saves an operation's evidence once, while it is Reserved or Fenced. */
export function putEvidence(
  db: Database,
  row: { operationId: string; evidence: unknown; evidenceHash: string },
): Promise<PutEvidenceResult> {
  return db.transaction(async (tx) => {
    const stored = await readOperation(tx, row.operationId);
    if (stored === null) return 'unknown-operation';
    if (stored.savedEvidenceHash !== null) {
      return stored.savedEvidenceHash === row.evidenceHash ? 'unchanged' : 'conflict';
    }
    const updated = await tx.query(
      `UPDATE core_runtime_operations
          SET saved_evidence = $2, saved_evidence_hash = $3, updated_at = now()
        WHERE operation_id = $1 AND saved_evidence IS NULL AND state IN ('reserved', 'fenced')
        RETURNING operation_id`,
      [row.operationId, JSON.stringify(row.evidence), row.evidenceHash],
    );
    return updated.rowCount === 1 ? 'created' : 'not-current';
  });
}

/** The only state moves the stand-in makes: forward by one, or from a current state to Abandoned. */
export const allowedMoves: Readonly<Record<string, readonly string[]>> = {
  reserved: ['fenced', 'abandoned'],
  fenced: ['committed', 'abandoned'],
  committed: ['completed', 'abandoned'],
  completed: [],
  abandoned: [],
};

export type MoveOutcome =
  | { result: 'moved'; stateRevision: number }
  | { result: 'unknown-operation' | 'stale-revision' | 'not-allowed' | 'no-evidence' };

/** Moves an operation from the state revision the caller read to `to`; never skips a check. */
export async function moveOperation(
  db: Database,
  move: { operationId: string; fromRevision: number; to: string },
): Promise<MoveOutcome> {
  return db.transaction(async (tx) => {
    const stored = await readOperation(tx, move.operationId);
    if (stored === null) return { result: 'unknown-operation' };
    if (stored.stateRevision !== move.fromRevision) return { result: 'stale-revision' };
    if (!(allowedMoves[stored.state] ?? []).includes(move.to)) return { result: 'not-allowed' };
    if (move.to === 'committed' && stored.savedEvidenceHash === null) return { result: 'no-evidence' };
    const { rows } = await tx.query<{ stateRevision: number }>(
      `UPDATE core_runtime_operations SET state = $3, state_revision = state_revision + 1, updated_at = now()
        WHERE operation_id = $1 AND state_revision = $2
        RETURNING state_revision AS "stateRevision"`,
      [move.operationId, move.fromRevision, move.to],
    );
    const moved = rows[0];
    return moved === undefined
      ? { result: 'stale-revision' }
      : { result: 'moved', stateRevision: moved.stateRevision };
  });
}

export interface RuntimeRegistrationRow {
  ref: RuntimeStepRef;
  registrationId: string;
  profileId: string;
  sessionId: string;
  generation: number;
}

const registrationColumns = `
  json_build_object('tenantId', tenant_id, 'projectId', project_id, 'runId', run_id,
                    'stepId', step_id, 'environmentId', environment_id) AS ref,
  registration_id AS "registrationId", profile_id AS "profileId", session_id AS "sessionId", generation`;

export async function readCurrentRegistration(
  q: Queryable,
  ref: RuntimeStepRef,
): Promise<RuntimeRegistrationRow | null> {
  const { rows } = await q.query<RuntimeRegistrationRow>(
    `SELECT ${registrationColumns} FROM core_runtime_registrations
      WHERE ${stepWhere} ORDER BY generation DESC LIMIT 1`,
    stepParams(ref),
  );
  return rows[0] ?? null;
}

export type PutRegistrationResult = PutResult | 'generation-gap';

/** Registers a Runtime at exactly the next generation of its step (1 for the first). */
export function putRegistration(
  db: Database,
  row: RuntimeRegistrationRow & { createdBy: string },
): Promise<PutRegistrationResult> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<RuntimeRegistrationRow>(
      `SELECT ${registrationColumns} FROM core_runtime_registrations WHERE registration_id = $1`,
      [row.registrationId],
    );
    const stored = rows[0];
    if (stored !== undefined) {
      return JSON.stringify(canonical(stored)) === JSON.stringify(canonical(row)) ? 'unchanged' : 'conflict';
    }
    const current = await readCurrentRegistration(tx, row.ref);
    if (row.generation !== (current?.generation ?? 0) + 1) return 'generation-gap';
    const inserted = await tx.query(
      `INSERT INTO core_runtime_registrations (tenant_id, project_id, run_id, step_id, environment_id,
                                               registration_id, profile_id, session_id, generation, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING RETURNING registration_id`,
      [
        ...stepParams(row.ref),
        row.registrationId,
        row.profileId,
        row.sessionId,
        row.generation,
        row.createdBy,
      ],
    );
    return inserted.rowCount === 1 ? 'created' : 'conflict';
  });
}

function canonical(r: RuntimeRegistrationRow): unknown[] {
  const { ref } = r;
  return [
    ref.tenantId,
    ref.projectId,
    ref.runId,
    ref.stepId,
    ref.environmentId,
    r.registrationId,
    r.profileId,
    r.sessionId,
    r.generation,
  ];
}
