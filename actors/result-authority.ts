// The fresh authority a provider result is committed under (docs/architecture.md "Results under
// fresh authority"): whose, and whether it and the run's pinned selection still hold, asked inside
// the transaction that commits the result.
import type { AuthorityLapseCode } from '../machines/environment-context.ts';
import type { Queryable } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import { readReleaseRequester } from '../store/journal.ts';
import type { LeaseRow } from '../store/leases.ts';
import { ForbiddenError, RunSelectionMissingError } from './errors.ts';
import { Guard, type AuthorityDeps } from './guard.ts';

/**
 * A release result is committed under the caller who last asked for the release over HTTP since
 * the lease was reserved; a lifecycle release (retired, lost) under the lease's provisioner.
 */
export async function releaseSubjectOf(tx: Queryable, lease: LeaseRow): Promise<string | null> {
  return (await readReleaseRequester(tx, lease.environmentId, lease.createdAt)) ?? lease.requestedBy;
}

/**
 * Does `subject` (who provisioned or released the lease) still hold its permissions, and the run its
 * pinned selection, now (inside the transaction that commits the result)? What lapsed, or
 * undefined. An authority that cannot answer counts as lapsed here: the result is kept, the lease
 * is only parked. A lease from before subjects were recorded has none to ask.
 */
export async function authorityLapseOf(
  deps: AuthorityDeps,
  tx: Queryable,
  row: EnvironmentRow,
  subject: string | null,
): Promise<{ code: AuthorityLapseCode; message: string } | undefined> {
  if (subject === null) return undefined;
  const guard = new Guard(deps, { tenantId: row.tenantId, subject }, row.projectId, [
    'WriteProjects',
    'ReadRunSelection',
  ]);
  try {
    const selection = await guard.checkWithSelection(row.runId, tx);
    if (selection.selectionHash === row.runSelectionHash) return undefined;
    return {
      code: 'run-selection-changed',
      message: `run ${row.runId} no longer has the selection it pinned`,
    };
  } catch (error) {
    if (error instanceof ForbiddenError) {
      return { code: 'authority-lapsed', message: `${subject} no longer holds ${error.missing.join(', ')}` };
    }
    if (error instanceof RunSelectionMissingError) {
      return { code: 'run-selection-missing', message: `run ${row.runId} has no selection any more` };
    }
    const reason = error instanceof Error ? error.message : String(error);
    return { code: 'authority-unavailable', message: `authority could not be confirmed: ${reason}` };
  }
}
