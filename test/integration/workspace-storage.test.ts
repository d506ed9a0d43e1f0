// Workspace storage is read back before a lease is reserved (embedded mode, over the HTTP API): a
// provision whose storage does not hold exactly the volume's PVC and bound PV for the requested
// generation is refused with a 409 naming the failing check, and reserves, attaches and dispatches
// nothing. The first admitted provision pins the PVC; a later one that finds a replaced PVC (new UID)
// is refused. An outage is 503, never a verdict. Old databases get their volumes' storage from the
// migration. (That a current lease keeps its volume Attached, so release and replace wait for the
// receipt, is asserted in sandbox-admission.test.ts and sandbox-one-lease.test.ts.)
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWorkspace } from '../../actors/sandbox/admission.ts';
import { WorkspaceStorageUnavailableError } from '../../actors/workspace/storage.ts';
import { migrate } from '../../store/migrate.ts';
import { createPgDatabase } from '../../store/pg-database.ts';
import { readStorageBinding } from '../../store/workspace-bindings.ts';
import { EmbeddedWorkspaceStorage } from '../../store/workspace-storage.ts';
import { createVolume } from '../../store/workspaces.ts';
import { backends, openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { environmentRows, problemOf, provisionWith, slug } from '../support/sandbox-scenarios.ts';

/** The lease a provision would record; the embedded storage, in no cluster, reads nothing of it. */
const embeddedLease = { providerOptions: { providerId: 'simulated' } };

describe.each(backends)('workspace storage at admission (%s)', (backend) => {
  let handle: BackendHandle;
  let h: Harness;

  beforeAll(async () => {
    handle = await openBackend(backend);
    h = await buildHarness(handle.db, {
      workers: {},
      provider: { phaseDelaysMs: { imageReady: 5, started: 10 } },
    });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
  });

  const storage = (s: Scenario, assignments: string, values: unknown[] = []) =>
    h.db.query(`UPDATE embedded_workspace_storage SET ${assignments} WHERE volume_id = $1`, [
      s.volume.volumeId,
      ...values,
    ]);

  /** No lease, attempt or outbox row, the volume still Available, and no binding pinned. */
  async function expectNothingReserved(s: Scenario, leases = 0) {
    const rows = await environmentRows(h.db, s.environmentId);
    expect(rows.leases).toHaveLength(leases);
    expect(rows.attempts.filter((a) => a.kind === 'provision')).toHaveLength(leases);
    const volume = await h.db.query<{ state: string }>(
      'SELECT state FROM workspace_volumes WHERE volume_id = $1',
      [s.volume.volumeId],
    );
    expect(volume.rows[0]?.state).toBe('Available');
  }

  it('admits storage as the volume got it, and pins its PVC and PV', async () => {
    const s = await setupScenario(h, { project: 'st-good', run: 'run-good' });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    const { rows } = await h.db.query<{ uid: string; pvUid: string }>(
      'SELECT pvc_uid AS uid, pv_uid AS "pvUid" FROM embedded_workspace_storage WHERE volume_id = $1',
      [s.volume.volumeId],
    );
    const pvcName = s.volume.volumeId.replaceAll('_', '-');
    const binding = await readStorageBinding(h.db, s.volume.volumeId);
    expect(binding?.claimSpecSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(binding).toEqual({
      selection: { providerId: 'embedded', optionsRevision: '1' },
      pvcNamespace: 'embedded',
      pvcName,
      pvcUid: rows[0]?.uid,
      pv: {
        name: `pv-${pvcName}`,
        uid: rows[0]?.pvUid,
        claimRef: { namespace: 'embedded', name: pvcName, uid: rows[0]?.uid },
      },
      claimSpecSha256: binding?.claimSpecSha256,
      mountOptions: [],
    });
  });

  const refusals: [string, string, string, unknown[]][] = [
    ['annotations at another data generation', 'workspace-storage-mismatch', `pvc_data_generation = '2'`, []],
    [
      'annotations for another Environment',
      'workspace-storage-mismatch',
      'pvc_environment_id = $2',
      ['env_x'],
    ],
    ['an unbound PVC', 'workspace-pvc-unbound', `pvc_phase = 'Pending', pvc_volume_name = NULL`, []],
    ['a PV claimed by another UID', 'workspace-pv-claim-mismatch', 'pv_claim_uid = $2', [randomUUID()]],
    ['another storage selection', 'workspace-selection-changed', `storage_options_revision = '2'`, []],
  ];
  it.each(refusals)(
    'refuses %s with 409 %s and reserves nothing',
    async (what, code, assignments, values) => {
      const s = await setupScenario(h, { project: `st-${code}-${refusals.findIndex((r) => r[0] === what)}` });
      await storage(s, assignments, values);
      const res = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s),
      });
      expect(res.status).toBe(409);
      const problem = await problemOf(res);
      expect(slug(problem)).toBe(code);
      expect(problem['volumeId']).toBe(s.volume.volumeId);
      expect(problem['checks']).toEqual([expect.objectContaining({ code })]);
      expect(problem.detail).toContain(s.volume.volumeId);
      await expectNothingReserved(s);
      expect(await readStorageBinding(h.db, s.volume.volumeId)).toBeNull();
    },
  );

  const replacements: [string, string, string[]][] = [
    // The PVC is deleted and made again under its name: a new UID; the PV still names the old one.
    ['PVC', 'pvc_uid = $2', ['workspace-pvc-replaced', 'workspace-pv-claim-mismatch']],
    // The PV is deleted and made again under its name, claiming the same PVC: only its UID is new.
    ['PV', 'pv_uid = $2', ['workspace-pv-replaced']],
  ];
  it.each(replacements)(
    'refuses a %s replaced after the first lease with 409 naming it',
    async (what, assignments, codes) => {
      const s = await setupScenario(h, { project: `st-replaced-${what}`, run: 'run-replaced' });
      const first = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s),
      });
      expect(first.status).toBe(202);
      await waitForLease(h, s, (l) => l['state'] === 'Active');
      const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
        token: s.token,
        body: { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'abandon-1' },
      });
      expect(abandoned.status).toBe(202);
      await waitForLease(h, s, (l) => l['state'] === 'Released');
      const before = await environmentRows(h.db, s.environmentId);

      await storage(s, assignments, [randomUUID()]);
      const res = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionWith(s.volume, 'prov-2'),
      });
      expect(res.status).toBe(409);
      const problem = await problemOf(res);
      expect(slug(problem)).toBe(codes[0]);
      expect((problem['checks'] as { code: string }[]).map((c) => c.code)).toEqual(codes);
      expect(await environmentRows(h.db, s.environmentId)).toEqual(before);
      await expectNothingReserved(s, 1);
    },
  );

  it('answers 503 workspace-storage-unavailable when storage cannot be read, and pins nothing', async () => {
    const s = await setupScenario(h, { project: 'st-outage', run: 'run-outage' });
    const env = { environmentId: s.environmentId, tenantId: 'acme', projectId: 'st-outage' };
    // A database nothing listens for: the storage's read fails, as a real outage does.
    const down = createPgDatabase({ connectionString: 'postgres://postgres@127.0.0.1:1/test', max: 1 });
    try {
      const refused = verifyWorkspace(h.db, env, s.volume, embeddedLease, new EmbeddedWorkspaceStorage(down));
      await expect(refused).rejects.toBeInstanceOf(WorkspaceStorageUnavailableError);
      await expect(refused).rejects.toMatchObject({ status: 503, code: 'workspace-storage-unavailable' });
    } finally {
      await down.close();
    }
    expect(await readStorageBinding(h.db, s.volume.volumeId)).toBeNull();
    // Readable again, the same volume is admitted.
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    expect(await json(res)).toMatchObject({ state: 'Provisioning' });
  });
});

/** Applies only the core migrations numbered below `version`: the database as an older Sandlot left it. */
async function migrateBelow(db: BackendHandle['db'], version: number): Promise<void> {
  const older = mkdtempSync(join(tmpdir(), 'sandlot-migrations-'));
  try {
    const all = new URL('../../migrations/', import.meta.url);
    const numberOf = (src: string) => Number(/(\d{4})_[^/]*\.sql$/.exec(src)?.[1] ?? 0);
    cpSync(all, older, { recursive: true, filter: (src) => numberOf(src) < version });
    await migrate(db, { directory: older });
  } finally {
    rmSync(older, { recursive: true, force: true });
  }
}

const oldEnvironment = `INSERT INTO environments (environment_id, tenant_id, project_id, run_id, idempotency_key,
     run_selection_hash, machine_version, snapshot, revision, lifecycle_state, lifecycle_generation, created_by)
   VALUES ('env_old', 'acme', 'checkout', 'run-1', 'k', 'h', 1, '{}', 1, 'Registered', 1, 'alice')`;
const env = { environmentId: 'env_old', tenantId: 'acme', projectId: 'checkout' };
const volume = { volumeId: 'vol_0123456789abcdef0123456789abcdef', resourceGeneration: 1, dataGeneration: 1 };

describe('a database migrated before workspace storage', () => {
  it('gets storage for its existing volumes, which then pass the check', async () => {
    const handle = await openBackend('postgres');
    try {
      await migrateBelow(handle.db, 7);
      await handle.db.query(oldEnvironment);
      // The volume as the Workspace owner wrote it before migration 0007 existed.
      await handle.db.query(
        `INSERT INTO workspace_volumes (volume_id, environment_id, idempotency_key, state)
         VALUES ($1, 'env_old', 'ws-1', 'Available')`,
        [volume.volumeId],
      );
      const { applied } = await migrate(handle.db);
      expect(applied[0]).toBe('0007_workspace_storage.sql');

      await verifyWorkspace(handle.db, env, volume, embeddedLease);
      expect(await readStorageBinding(handle.db, volume.volumeId)).toMatchObject({
        pvcNamespace: 'embedded',
        pvcName: 'vol-0123456789abcdef0123456789abcdef',
        pv: { name: 'pv-vol-0123456789abcdef0123456789abcdef' },
      });
    } finally {
      await handle.close();
    }
  });

  it('pins the PV of a binding pinned before PVs were at its next verified admission', async () => {
    const handle = await openBackend('postgres');
    try {
      await migrateBelow(handle.db, 26);
      await handle.db.query(oldEnvironment);
      await handle.db.transaction((tx) => createVolume(tx, 'env_old', 'ws-1'));
      const { rows } = await handle.db.query<{ volumeId: string }>(
        `SELECT volume_id AS "volumeId" FROM workspace_volumes WHERE environment_id = 'env_old'`,
      );
      const made = { ...volume, volumeId: rows[0]?.volumeId ?? '' };
      // The binding as an older Sandlot pinned it: selection and PVC, no PV.
      await handle.db.query(
        `INSERT INTO workspace_storage_bindings
           (volume_id, storage_provider_id, storage_options_revision, pvc_namespace, pvc_name, pvc_uid)
         SELECT volume_id, storage_provider_id, storage_options_revision, pvc_namespace, pvc_name, pvc_uid
           FROM embedded_workspace_storage WHERE volume_id = $1`,
        [made.volumeId],
      );
      expect((await migrate(handle.db)).applied[0]).toBe('0026_workspace_storage_pv_pin.sql');
      expect((await readStorageBinding(handle.db, made.volumeId))?.pv).toBeNull();

      await verifyWorkspace(handle.db, env, made, embeddedLease);
      const pinned = await readStorageBinding(handle.db, made.volumeId);
      expect(pinned?.pv).toMatchObject({ claimRef: { uid: pinned?.pvcUid } });
      // From then on, a replaced PV is refused.
      await handle.db.query(`UPDATE embedded_workspace_storage SET pv_uid = $2 WHERE volume_id = $1`, [
        made.volumeId,
        randomUUID(),
      ]);
      await expect(verifyWorkspace(handle.db, env, made, embeddedLease)).rejects.toMatchObject({
        status: 409,
        code: 'workspace-pv-replaced',
      });
    } finally {
      await handle.close();
    }
  });
});
