import type { Queryable } from '../store/db.ts';
import { readEnvironment, type EnvironmentRow } from '../store/environments.ts';
import { EnvironmentNotFoundError } from './errors.ts';
import type { Caller } from './ports.ts';

export interface EnvironmentAddress {
  projectId: string;
  runId: string;
  environmentId: string;
}

/** Another tenant's Environment, or one under another project or run, does not exist for you. */
export async function readOwnedEnvironment(
  q: Queryable,
  caller: Caller,
  address: EnvironmentAddress,
): Promise<EnvironmentRow> {
  const row = await readEnvironment(q, address.environmentId);
  if (
    row?.tenantId !== caller.tenantId ||
    row.projectId !== address.projectId ||
    row.runId !== address.runId
  ) {
    throw new EnvironmentNotFoundError(address.environmentId);
  }
  return row;
}
