// The WorkspaceStorage contract against the embedded storage (table embedded_workspace_storage), on
// both database backends. Volumes are created by the embedded Workspace owner's own createVolume, so
// what is read back is what a new volume really gets; an outage is a database that does not answer
// (a pool on a loopback port nothing listens on).
import { randomBytes, randomUUID } from 'node:crypto';
import { insertEnvironment } from '../../store/environments.ts';
import { migrate } from '../../store/migrate.ts';
import { createPgDatabase } from '../../store/pg-database.ts';
import { EmbeddedWorkspaceStorage } from '../../store/workspace-storage.ts';
import { createVolume } from '../../store/workspaces.ts';
import type { Database } from '../../store/db.ts';
import { backends, openBackend } from '../support/databases.ts';
import { defineWorkspaceStorageContract } from './workspace-storage-cases.ts';

async function newEnvironment(db: Database): Promise<string> {
  const environmentId = `env_${randomBytes(8).toString('hex')}`;
  await insertEnvironment(db, {
    environmentId,
    tenantId: 'acme',
    projectId: 'checkout',
    runId: 'run-1',
    idempotencyKey: environmentId,
    runSelectionHash: 'h',
    machineVersion: 1,
    snapshot: {},
    lifecycleState: 'Registered',
    lifecycleGeneration: 1,
    createdBy: 'alice',
  });
  return environmentId;
}

for (const backend of backends) {
  defineWorkspaceStorageContract(`embedded (${backend})`, async () => {
    const handle = await openBackend(backend);
    const { db } = handle;
    await migrate(db);
    const storage = new EmbeddedWorkspaceStorage(db);
    const set = (volumeId: string, assignments: string, values: unknown[]) =>
      db.query(`UPDATE embedded_workspace_storage SET ${assignments} WHERE volume_id = $1`, [
        volumeId,
        ...values,
      ]);
    let unreachable: Database | undefined;

    const volumeOf = async (create: boolean) => {
      const environmentId = await newEnvironment(db);
      const made = await db.transaction((tx) => createVolume(tx, environmentId, 'ws-1'));
      if (!create)
        await db.query('DELETE FROM embedded_workspace_storage WHERE volume_id = $1', [made.volume.volumeId]);
      return {
        tenantId: 'acme',
        projectId: 'checkout',
        environmentId,
        volumeId: made.volume.volumeId,
        resourceGeneration: made.volume.resourceGeneration,
        dataGeneration: made.volume.dataGeneration,
      };
    };

    return {
      storage,
      // A simulated lease's: the embedded storage, in no cluster, reads nothing of it.
      lease: { providerOptions: { providerId: 'simulated', optionsRevision: '1' } },
      newVolume: () => volumeOf(true),
      volumeWithoutStorage: () => volumeOf(false),
      replacePvc: async (v) => {
        await set(v.volumeId, 'pvc_uid = $2', [randomUUID()]);
      },
      annotate: async (v, values) => {
        await set(
          v.volumeId,
          `pvc_environment_id = coalesce($2, pvc_environment_id),
           pvc_resource_generation = coalesce($3, pvc_resource_generation),
           pvc_data_generation = coalesce($4, pvc_data_generation)`,
          [values.environmentId ?? null, values.resourceGeneration ?? null, values.dataGeneration ?? null],
        );
      },
      replacePv: async (v) => {
        await set(v.volumeId, 'pv_uid = $2', [randomUUID()]);
      },
      rebindPv: async (v) => {
        await set(v.volumeId, 'pv_name = $2, pv_uid = $3, pvc_volume_name = $2', [
          `pv-other-${randomBytes(4).toString('hex')}`,
          randomUUID(),
        ]);
      },
      respec: async (v) => {
        await set(v.volumeId, `pvc_spec = jsonb_set(pvc_spec, '{resources,requests,storage}', '"2Gi"')`, []);
      },
      remount: async (v, mountOptions) => {
        await set(v.volumeId, 'pv_mount_options = $2::jsonb', [JSON.stringify(mountOptions)]);
      },
      claimPvBy: async (v, claim) => {
        await set(
          v.volumeId,
          'pv_claim_name = coalesce($2, pv_claim_name), pv_claim_uid = coalesce($3, pv_claim_uid)',
          [claim.name ?? null, claim.uid ?? null],
        );
      },
      unbind: async (v) => {
        await set(v.volumeId, `pvc_phase = 'Pending', pvc_volume_name = NULL`, []);
      },
      select: async (v, selection) => {
        await set(v.volumeId, 'storage_provider_id = $2, storage_options_revision = $3', [
          selection.providerId,
          selection.optionsRevision,
        ]);
      },
      unavailable: () => {
        unreachable ??= createPgDatabase({
          connectionString: 'postgres://postgres@127.0.0.1:1/test',
          max: 1,
        });
        return Promise.resolve(new EmbeddedWorkspaceStorage(unreachable));
      },
      close: async () => {
        await unreachable?.close();
        await handle.close();
      },
    };
  });
}
