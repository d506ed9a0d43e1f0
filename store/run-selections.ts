// Embedded run selection: immutable once written. An identical second write is a no-op; a
// different one is refused, because Environments pin the selection hash at registration.
import type { ProviderCandidate, RunSelection, RunSelectionSource } from '../actors/ports.ts';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import type { Database, Queryable } from './db.ts';

export function selectionHash(candidates: readonly ProviderCandidate[]): string {
  return sha256Hex(canonicalJson(candidates));
}

export class TableRunSelections implements RunSelectionSource {
  constructor(private readonly db: Database) {}

  async get(
    tenantId: string,
    projectId: string,
    runId: string,
    via?: Queryable,
  ): Promise<RunSelection | null> {
    const { rows } = await (via ?? this.db).query<RunSelection>(
      `SELECT tenant_id AS "tenantId", project_id AS "projectId", run_id AS "runId", candidates,
              selection_hash AS "selectionHash"
         FROM run_selections WHERE tenant_id = $1 AND project_id = $2 AND run_id = $3`,
      [tenantId, projectId, runId],
    );
    return rows[0] ?? null;
  }
}

export type PutSelectionResult = 'created' | 'unchanged' | 'conflict';

export async function putRunSelection(
  db: Database,
  selection: Omit<RunSelection, 'selectionHash'>,
  createdBy: string,
): Promise<{ result: PutSelectionResult; selection: RunSelection }> {
  const hash = selectionHash(selection.candidates);
  return db.transaction(async (tx) => {
    const inserted = await tx.query(
      `INSERT INTO run_selections (tenant_id, project_id, run_id, candidates, selection_hash, created_by)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING run_id`,
      [
        selection.tenantId,
        selection.projectId,
        selection.runId,
        JSON.stringify(selection.candidates),
        hash,
        createdBy,
      ],
    );
    const stored = await new TableRunSelections(db).get(
      selection.tenantId,
      selection.projectId,
      selection.runId,
      tx,
    );
    if (stored === null) throw new Error('run selection vanished after insert');
    if (inserted.rowCount === 1) return { result: 'created', selection: stored };
    return { result: stored.selectionHash === hash ? 'unchanged' : 'conflict', selection: stored };
  });
}
