// Embedded Workspace storage: the simulated PVC/PV pair of each volume (table
// embedded_workspace_storage, migration 0007), recorded by the embedded Workspace owner when it
// creates the volume, and read back by EmbeddedWorkspaceStorage, the WorkspaceStorage port's
// embedded implementation. It stands in for the PVC and PV a Kubernetes deployment reads back
// (providers/workspace-storage/kubernetes-storage.ts); both pass test/contract/workspace-storage-cases.ts.
import { randomUUID } from 'node:crypto';
import type {
  LeaseProviderRecord,
  StorageEvidence,
  StorageSelection,
  WorkspaceStorage,
  WorkspaceVolumeRef,
} from '../actors/ports.ts';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import type { Queryable } from './db.ts';

/** The embedded storage's own selection: what its volumes are made under. */
export const EMBEDDED_STORAGE_SELECTION: StorageSelection = { providerId: 'embedded', optionsRevision: '1' };
export const EMBEDDED_STORAGE_NAMESPACE = 'embedded';

/** `vol_<hex>` → `vol-<hex>`, as the Agent Sandbox adapter names a volume's PVC. */
export const embeddedPvcNameOf = (volumeId: string) => volumeId.replaceAll('_', '-');

/** Records a new volume's storage: a Bound PVC annotated with its owner and generations, and its PV. */
export async function recordEmbeddedStorage(
  tx: Queryable,
  volume: { volumeId: string; environmentId: string; resourceGeneration: number; dataGeneration: number },
): Promise<void> {
  const pvcName = embeddedPvcNameOf(volume.volumeId);
  const pvcUid = randomUUID();
  await tx.query(
    `INSERT INTO embedded_workspace_storage (
       volume_id, storage_provider_id, storage_options_revision, pvc_namespace, pvc_name, pvc_uid,
       pvc_environment_id, pvc_resource_generation, pvc_data_generation, pvc_phase, pvc_volume_name,
       pv_name, pv_uid, pv_claim_namespace, pv_claim_name, pv_claim_uid)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'Bound', $10, $10, $11, $4, $5, $6)
     ON CONFLICT DO NOTHING`,
    [
      volume.volumeId,
      EMBEDDED_STORAGE_SELECTION.providerId,
      EMBEDDED_STORAGE_SELECTION.optionsRevision,
      EMBEDDED_STORAGE_NAMESPACE,
      pvcName,
      pvcUid,
      volume.environmentId,
      String(volume.resourceGeneration),
      String(volume.dataGeneration),
      `pv-${pvcName}`,
      randomUUID(),
    ],
  );
}

interface StorageRow {
  providerId: string | null;
  optionsRevision: string | null;
  pvcNamespace: string;
  pvcName: string;
  pvcUid: string;
  environmentId: string | null;
  resourceGeneration: string | null;
  dataGeneration: string | null;
  phase: string | null;
  volumeName: string | null;
  deleting: boolean;
  pvName: string | null;
  pvUid: string | null;
  claimNamespace: string | null;
  claimName: string | null;
  claimUid: string | null;
  claimSpec: Record<string, unknown>;
  mountOptions: string[];
}

const columns = `storage_provider_id AS "providerId", storage_options_revision AS "optionsRevision",
  pvc_namespace AS "pvcNamespace", pvc_name AS "pvcName", pvc_uid AS "pvcUid",
  pvc_environment_id AS "environmentId", pvc_resource_generation AS "resourceGeneration",
  pvc_data_generation AS "dataGeneration", pvc_phase AS phase, pvc_volume_name AS "volumeName",
  pvc_deleting AS deleting, pv_name AS "pvName", pv_uid AS "pvUid", pv_claim_namespace AS "claimNamespace",
  pv_claim_name AS "claimName", pv_claim_uid AS "claimUid", pvc_spec AS "claimSpec",
  pv_mount_options AS "mountOptions"`;

// The embedded storage lives in no cluster: there is none to compare with the lease's.
function evidenceOf(row: StorageRow | undefined): StorageEvidence {
  if (row === undefined) return { cluster: null, selection: null, pvc: null, pv: null };
  const selection =
    row.providerId === null || row.optionsRevision === null
      ? null
      : { providerId: row.providerId, optionsRevision: row.optionsRevision };
  // A PV is only found through the claim's volumeName, as in Kubernetes.
  const bound = row.volumeName !== null && row.volumeName === row.pvName && row.pvUid !== null;
  return {
    cluster: null,
    selection,
    pvc: {
      namespace: row.pvcNamespace,
      name: row.pvcName,
      uid: row.pvcUid,
      environmentId: row.environmentId,
      resourceGeneration: row.resourceGeneration,
      dataGeneration: row.dataGeneration,
      phase: row.phase,
      volumeName: row.volumeName,
      deleting: row.deleting,
      // The claim's whole spec, the bound volume's name in it as in a Kubernetes claim.
      claimSpecSha256: sha256Hex(
        canonicalJson(
          row.volumeName === null ? row.claimSpec : { ...row.claimSpec, volumeName: row.volumeName },
        ),
      ),
    },
    pv: bound
      ? {
          name: row.pvName!,
          uid: row.pvUid!,
          claimRef:
            row.claimNamespace === null && row.claimName === null && row.claimUid === null
              ? null
              : { namespace: row.claimNamespace, name: row.claimName, uid: row.claimUid },
          mountOptions: row.mountOptions,
        }
      : null,
  };
}

/** The embedded WorkspaceStorage: reads the volume's row; a failed read throws (an outage). */
export class EmbeddedWorkspaceStorage implements WorkspaceStorage {
  readonly selection = EMBEDDED_STORAGE_SELECTION;

  constructor(private readonly db: Queryable) {}

  /** The lease records nothing the embedded storage is read by: one table, in no cluster. */
  async inspect(
    volume: WorkspaceVolumeRef,
    _lease: LeaseProviderRecord,
    signal: AbortSignal,
  ): Promise<StorageEvidence> {
    signal.throwIfAborted();
    const { rows } = await this.db.query<StorageRow>(
      `SELECT ${columns} FROM embedded_workspace_storage WHERE volume_id = $1`,
      [volume.volumeId],
    );
    signal.throwIfAborted();
    return evidenceOf(rows[0]);
  }
}
