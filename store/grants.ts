// Embedded Projects authority: grants kept in project_grants. Read fresh on every check, so a
// revoked grant takes effect on the very next check.
import type { Caller, Permission, ProjectsAuthority } from '../actors/ports.ts';
import type { Database, Queryable } from './db.ts';

export class GrantsAuthority implements ProjectsAuthority {
  constructor(private readonly db: Database) {}

  async permissions(caller: Caller, projectId: string, via?: Queryable): Promise<ReadonlySet<Permission>> {
    const { rows } = await (via ?? this.db).query<{ permissions: Permission[] }>(
      `SELECT permissions FROM project_grants WHERE tenant_id = $1 AND project_id = $2 AND subject = $3`,
      [caller.tenantId, projectId, caller.subject],
    );
    return new Set(rows[0]?.permissions ?? []);
  }
}

/** Replaces a subject's permissions on a project; an empty list revokes the grant. */
export async function putGrant(
  db: Queryable,
  grant: { tenantId: string; projectId: string; subject: string; permissions: readonly Permission[] },
): Promise<void> {
  if (grant.permissions.length === 0) {
    await db.query(`DELETE FROM project_grants WHERE tenant_id = $1 AND project_id = $2 AND subject = $3`, [
      grant.tenantId,
      grant.projectId,
      grant.subject,
    ]);
    return;
  }
  await db.query(
    `INSERT INTO project_grants (tenant_id, project_id, subject, permissions) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, project_id, subject)
     DO UPDATE SET permissions = EXCLUDED.permissions, updated_at = now()`,
    [grant.tenantId, grant.projectId, grant.subject, [...new Set(grant.permissions)].sort()],
  );
}
