// The Workspace record's storage binding (table workspace_storage_bindings, migrations 0007 and
// 0026): the storage selection, the exact PVC and the exact PV bound to it (with the claimRef it
// carried) that a volume was first admitted on. Pinned once, never rewritten, so a later provision
// compares storage with what the first one verified (a replaced PVC or PV has a new UID), together
// with the claim's full specification and the PV's mount options (migration 0030). A binding
// pinned before PVs (or claim specifications) were has none; the next verified check records it, once.
import type { StorageSelection } from '../actors/ports.ts';
import type { Queryable } from './db.ts';

/** The PersistentVolume a binding pinned: its name, UID and the claim its claimRef named. */
export interface PinnedVolume {
  name: string;
  uid: string;
  claimRef: { namespace: string; name: string; uid: string };
}

export interface StorageBinding {
  selection: StorageSelection;
  pvcNamespace: string;
  pvcName: string;
  pvcUid: string;
  /** Null for a binding pinned before migration 0026, until the next verified admission. */
  pv: PinnedVolume | null;
  /** The claim's full specification and the PV's approved mount options (null before migration 0030). */
  claimSpecSha256: string | null;
  mountOptions: string[] | null;
}

interface BindingRow {
  providerId: string;
  optionsRevision: string;
  pvcNamespace: string;
  pvcName: string;
  pvcUid: string;
  pvName: string | null;
  pvUid: string | null;
  claimNamespace: string | null;
  claimName: string | null;
  claimUid: string | null;
  claimSpecSha256: string | null;
  mountOptions: string[] | null;
}

export async function readStorageBinding(q: Queryable, volumeId: string): Promise<StorageBinding | null> {
  const { rows } = await q.query<BindingRow>(
    `SELECT storage_provider_id AS "providerId", storage_options_revision AS "optionsRevision",
            pvc_namespace AS "pvcNamespace", pvc_name AS "pvcName", pvc_uid AS "pvcUid",
            pv_name AS "pvName", pv_uid AS "pvUid", pv_claim_namespace AS "claimNamespace",
            pv_claim_name AS "claimName", pv_claim_uid AS "claimUid",
            pvc_claim_spec_sha256 AS "claimSpecSha256", pv_mount_options AS "mountOptions"
       FROM workspace_storage_bindings WHERE volume_id = $1`,
    [volumeId],
  );
  const row = rows[0];
  if (row === undefined) return null;
  const { providerId, optionsRevision, pvcNamespace, pvcName, pvcUid } = row;
  // The table's check keeps the five PV columns all set or all null.
  const pv =
    row.pvName === null || row.pvUid === null
      ? null
      : {
          name: row.pvName,
          uid: row.pvUid,
          claimRef: {
            namespace: row.claimNamespace ?? '',
            name: row.claimName ?? '',
            uid: row.claimUid ?? '',
          },
        };
  const { claimSpecSha256, mountOptions } = row;
  return {
    selection: { providerId, optionsRevision },
    pvcNamespace,
    pvcName,
    pvcUid,
    pv,
    claimSpecSha256,
    mountOptions,
  };
}

/**
 * Pins the binding unless one is pinned already (first writer wins), and its PV unless one is
 * pinned already; answers the binding that holds afterwards, which the caller compares with what it
 * verified.
 */
export async function pinStorageBinding(
  q: Queryable,
  volumeId: string,
  binding: StorageBinding & { pv: PinnedVolume; claimSpecSha256: string; mountOptions: string[] },
): Promise<StorageBinding> {
  const { pv } = binding;
  const pvValues = [pv.name, pv.uid, pv.claimRef.namespace, pv.claimRef.name, pv.claimRef.uid];
  await q.query(
    `INSERT INTO workspace_storage_bindings
       (volume_id, storage_provider_id, storage_options_revision, pvc_namespace, pvc_name, pvc_uid,
        pv_name, pv_uid, pv_claim_namespace, pv_claim_name, pv_claim_uid)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`,
    [
      volumeId,
      binding.selection.providerId,
      binding.selection.optionsRevision,
      binding.pvcNamespace,
      binding.pvcName,
      binding.pvcUid,
      ...pvValues,
    ],
  );
  // A binding pinned before PVs were gets the PV this admission verified against it.
  await q.query(
    `UPDATE workspace_storage_bindings
        SET pv_name = $2, pv_uid = $3, pv_claim_namespace = $4, pv_claim_name = $5, pv_claim_uid = $6
      WHERE volume_id = $1 AND pv_uid IS NULL`,
    [volumeId, ...pvValues],
  );
  // And one pinned before claim specifications were, the specification and mount options verified.
  await q.query(
    `UPDATE workspace_storage_bindings
        SET pvc_claim_spec_sha256 = $2, pv_mount_options = $3::jsonb
      WHERE volume_id = $1 AND pvc_claim_spec_sha256 IS NULL`,
    [volumeId, binding.claimSpecSha256, JSON.stringify(binding.mountOptions)],
  );
  const held = await readStorageBinding(q, volumeId);
  if (held === null) throw new Error(`workspace storage binding of ${volumeId} vanished after its pin`);
  return held;
}
