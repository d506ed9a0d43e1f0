import type { Queryable } from '../store/db.ts';
import { ForbiddenError, RunSelectionChangedError, RunSelectionMissingError } from './errors.ts';
import type { Caller, Permission, ProjectsAuthority, RunSelection, RunSelectionSource } from './ports.ts';

/** Asks the authority afresh; throws ForbiddenError naming what is missing. */
export async function requirePermissions(
  authority: ProjectsAuthority,
  caller: Caller,
  projectId: string,
  required: readonly Permission[],
  via?: Queryable,
): Promise<void> {
  const granted = await authority.permissions(caller, projectId, via);
  const missing = required.filter((p) => !granted.has(p));
  if (missing.length > 0) throw new ForbiddenError(missing);
}

export async function requireSelection(
  selections: RunSelectionSource,
  caller: Caller,
  projectId: string,
  runId: string,
  via?: Queryable,
): Promise<RunSelection> {
  const selection = await selections.get(caller.tenantId, projectId, runId, via);
  if (selection === null) throw new RunSelectionMissingError(runId);
  return selection;
}

/** The selection read at commit must be the one the Environment pinned. */
export async function requirePinnedSelection(
  selections: RunSelectionSource,
  caller: Caller,
  projectId: string,
  runId: string,
  pinnedHash: string,
  via?: Queryable,
): Promise<void> {
  const selection = await requireSelection(selections, caller, projectId, runId, via);
  if (selection.selectionHash !== pinnedHash) throw new RunSelectionChangedError(runId);
}
