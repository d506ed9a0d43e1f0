// The Workspace record's storage binding (table workspace_storage_bindings, migration 0007): the
// storage selection and exact PVC a volume was first admitted on. Pinned once, never rewritten, so a
// later provision compares storage with what the first one verified (a replaced PVC has a new UID).
import type { StorageSelection } from '../actors/ports.ts';
import type { Queryable } from './db.ts';

export interface StorageBinding {
  selection: StorageSelection;
  pvcNamespace: string;
  pvcName: string;
  pvcUid: string;
}

interface BindingRow {
  providerId: string;
  optionsRevision: string;
  pvcNamespace: string;
  pvcName: string;
  pvcUid: string;
}

export async function readStorageBinding(q: Queryable, volumeId: string): Promise<StorageBinding | null> {
  const { rows } = await q.query<BindingRow>(
    `SELECT storage_provider_id AS "providerId", storage_options_revision AS "optionsRevision",
            pvc_namespace AS "pvcNamespace", pvc_name AS "pvcName", pvc_uid AS "pvcUid"
       FROM workspace_storage_bindings WHERE volume_id = $1`,
    [volumeId],
  );
  const row = rows[0];
  if (row === undefined) return null;
  const { providerId, optionsRevision, ...pvc } = row;
  return { selection: { providerId, optionsRevision }, ...pvc };
}

/**
 * Pins the binding unless one is pinned already (first writer wins); answers the binding that holds
 * afterwards, which the caller compares with what it verified.
 */
export async function pinStorageBinding(
  q: Queryable,
  volumeId: string,
  binding: StorageBinding,
): Promise<StorageBinding> {
  await q.query(
    `INSERT INTO workspace_storage_bindings
       (volume_id, storage_provider_id, storage_options_revision, pvc_namespace, pvc_name, pvc_uid)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
    [
      volumeId,
      binding.selection.providerId,
      binding.selection.optionsRevision,
      binding.pvcNamespace,
      binding.pvcName,
      binding.pvcUid,
    ],
  );
  const held = await readStorageBinding(q, volumeId);
  if (held === null) throw new Error(`workspace storage binding of ${volumeId} vanished after its pin`);
  return held;
}
