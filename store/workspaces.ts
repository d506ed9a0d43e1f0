// Embedded Workspace owner: volumes bound to one Environment. A volume is reserved Attached by a
// compare-and-swap in the same transaction that reserves the lease (before any dispatch), and is
// detached only when the provider confirmed the release of that lease.
import { createHash } from 'node:crypto';
import type { Queryable } from './db.ts';
import { recordEmbeddedStorage } from './workspace-storage.ts';

export interface VolumeRow {
  volumeId: string;
  environmentId: string;
  idempotencyKey: string;
  resourceGeneration: number;
  dataGeneration: number;
  state: 'Available' | 'Attached';
  attachedLease: number | null;
  revision: number;
}

const columns = `volume_id AS "volumeId", environment_id AS "environmentId", idempotency_key AS "idempotencyKey",
  resource_generation AS "resourceGeneration", data_generation AS "dataGeneration", state,
  attached_lease AS "attachedLease", revision::int AS revision`;

export const volumeIdOf = (environmentId: string, idempotencyKey: string) =>
  `vol_${createHash('sha256').update(`${environmentId}\0${idempotencyKey}`).digest('hex').slice(0, 32)}`;

/** Creates the volume, or returns the one this key already created (`created` tells which). */
export async function createVolume(
  tx: Queryable,
  environmentId: string,
  idempotencyKey: string,
): Promise<{ created: boolean; volume: VolumeRow }> {
  const inserted = await tx.query<VolumeRow>(
    `INSERT INTO workspace_volumes (volume_id, environment_id, idempotency_key, state)
     VALUES ($1, $2, $3, 'Available') ON CONFLICT DO NOTHING RETURNING ${columns}`,
    [volumeIdOf(environmentId, idempotencyKey), environmentId, idempotencyKey],
  );
  if (inserted.rows[0] !== undefined) {
    // The embedded storage's PVC/PV pair comes with the volume (read back by EmbeddedWorkspaceStorage).
    await recordEmbeddedStorage(tx, inserted.rows[0]);
    return { created: true, volume: inserted.rows[0] };
  }
  const existing = await readVolume(tx, volumeIdOf(environmentId, idempotencyKey));
  if (existing === null) throw new Error('workspace volume vanished after conflict');
  return { created: false, volume: existing };
}

export async function readVolume(q: Queryable, volumeId: string): Promise<VolumeRow | null> {
  const { rows } = await q.query<VolumeRow>(`SELECT ${columns} FROM workspace_volumes WHERE volume_id = $1`, [
    volumeId,
  ]);
  return rows[0] ?? null;
}

/** CAS: attaches only the exact generation of an Available volume of this Environment. */
export async function attachVolume(
  tx: Queryable,
  binding: {
    volumeId: string;
    environmentId: string;
    resourceGeneration: number;
    dataGeneration: number;
    lease: number;
  },
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE workspace_volumes SET state = 'Attached', attached_lease = $5, revision = revision + 1, updated_at = now()
      WHERE volume_id = $1 AND environment_id = $2 AND resource_generation = $3 AND data_generation = $4
        AND state = 'Available'`,
    [
      binding.volumeId,
      binding.environmentId,
      binding.resourceGeneration,
      binding.dataGeneration,
      binding.lease,
    ],
  );
  return rowCount === 1;
}

export async function detachVolume(tx: Queryable, volumeId: string, lease: number): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE workspace_volumes SET state = 'Available', attached_lease = NULL, revision = revision + 1, updated_at = now()
      WHERE volume_id = $1 AND state = 'Attached' AND attached_lease = $2`,
    [volumeId, lease],
  );
  return rowCount === 1;
}

/** Why a late resource could not hold its volume: the volume's state then (migration 0027). */
export interface VolumeHoldConflict {
  volumeId: string;
  heldByLease: number | null;
  state: 'Attached' | 'Available' | 'Missing';
}

/**
 * A late resource of an earlier lease still mounts this volume: keep it Attached to that lease until
 * the resource's release receipt is durable (only an Available volume of this Environment). Returns
 * null when the lease holds it now, else the conflict: another lease holds it, or it is not ours.
 */
export async function holdVolume(
  tx: Queryable,
  binding: { volumeId: string; environmentId: string; lease: number },
): Promise<VolumeHoldConflict | null> {
  const { rowCount } = await tx.query(
    `UPDATE workspace_volumes SET state = 'Attached', attached_lease = $3, revision = revision + 1, updated_at = now()
      WHERE volume_id = $1 AND environment_id = $2 AND state = 'Available'`,
    [binding.volumeId, binding.environmentId, binding.lease],
  );
  if (rowCount === 1) return null;
  const volume = await readVolume(tx, binding.volumeId);
  if (volume === null || volume.environmentId !== binding.environmentId) {
    return { volumeId: binding.volumeId, heldByLease: null, state: 'Missing' };
  }
  if (volume.state === 'Attached' && volume.attachedLease === binding.lease) return null;
  return { volumeId: binding.volumeId, heldByLease: volume.attachedLease, state: volume.state };
}
