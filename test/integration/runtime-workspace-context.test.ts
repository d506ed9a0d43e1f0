// The runtime Workspace context (GET …/runtime-bootstrap/profiles/{profileId}/workspace) over the
// real app and PostgreSQL: a profile resolved for the current sandbox answers its lease and the
// Workspace record held with it (transition revision, generations, pinned Storage, mount), and
// nothing secret; the read is refused as the profile read is (run binding, authority, actor,
// unknown or stale profile, authority lost inside the owner transaction), refused when the
// Workspace record is not Attached to the lease exactly as its request recorded, answers no-store
// every time, and changes no row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectsAuthority } from '../../actors/ports.ts';
import { RuntimeWorkspaceContextReader } from '../../actors/runtime-profiles/workspace-context.ts';
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import { readProfileMapping } from '../../store/runtime-profiles.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

const SERVICE = 'sbx-workspace.sandboxes.svc.cluster.local';
const configuration: AgentHostConfiguration = {
  receiver: { configurePath: '/runtime/v1/configure', audience: 'agenthost-receiver' },
  profiles: { codex: { runtime: 'codex', model: { id: 'model-a' }, profileId: 'placeholder' } },
};
const placement = {
  podIP: '10.0.3.17',
  podUid: 'pod-workspace',
  service: 'sbx-workspace',
  serviceDns: SERVICE,
  endpoint: `https://${SERVICE}:8443`,
};

interface Context {
  environmentId: string;
  profileId: string;
  lease: Record<string, unknown>;
  workspace: {
    volumeId: string;
    state: string;
    transitionRevision: number;
    resourceGeneration: number;
    dataGeneration: number;
    storage: { providerId: string; pvc: { namespace: string; name: string; uid: string } };
    mount: { path: string; readOnly: boolean };
  };
  networkPolicyGeneration: number;
}
interface Problem {
  type: string;
  reason?: string;
  volumeId?: string;
}

describe('runtime Workspace context', () => {
  let handle: BackendHandle;
  let h: Harness;

  beforeAll(async () => {
    handle = await openBackend('postgres');
    h = await buildHarness(handle.db, {
      workers: {},
      agentHostProfiles: configuration,
      provider: { phaseDelaysMs: { imageReady: 5, started: 10 }, placementFor: () => placement },
    });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
  });

  const runToken = (run: string, subject = 'alice', tenant = 'acme') =>
    h.token(tenant, subject, { runBinding: { projectId: 'checkout', runId: run } });
  const problemOf = (res: Response) => json<Problem>(res);
  const context = (s: Scenario, token: string, profileId: string) =>
    h.request('GET', `${s.base}/runtime-bootstrap/profiles/${profileId}/workspace`, { token });

  async function provision(s: Scenario, key: string): Promise<void> {
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, key),
    });
    expect(res.status).toBe(202);
    const { resourceGeneration } = await json<{ resourceGeneration: number }>(res);
    await waitForLease(
      h,
      s,
      (l) => l['state'] === 'Active' && l['resourceGeneration'] === resourceGeneration,
    );
  }

  /** An Active sandbox, and a profile resolved for it by alice's run-bound token. */
  async function resolved(run: string): Promise<{ s: Scenario; token: string; profileId: string }> {
    const s = await setupScenario(h, { run });
    await provision(s, 'prov-1');
    const token = await runToken(run);
    const res = await h.request('POST', `${s.base}/runtime-bootstrap/profiles/codex/resolve`, { token });
    expect(res.status).toBe(200);
    return { s, token, profileId: (await json<{ profileId: string }>(res)).profileId };
  }

  const volumeRow = async (volumeId: string) =>
    (
      await handle.db.query<{ revision: number; dataGeneration: number; attachedLease: number }>(
        `SELECT revision::int AS revision, data_generation AS "dataGeneration", attached_lease AS "attachedLease"
           FROM workspace_volumes WHERE volume_id = $1`,
        [volumeId],
      )
    ).rows[0];

  /** Every row a read could touch, with its revision and stamp. */
  const rowsOf = async (s: Scenario) =>
    (
      await handle.db.query(
        `SELECT (SELECT json_agg(json_build_array(revision, updated_at)) FROM environments
                  WHERE environment_id = $1) AS environment,
                (SELECT json_agg(json_build_array(resource_generation, state, revision, updated_at)
                                 ORDER BY resource_generation) FROM sandbox_leases WHERE environment_id = $1) AS leases,
                (SELECT json_agg(json_build_array(volume_id, state, revision, data_generation, updated_at))
                   FROM workspace_volumes WHERE environment_id = $1) AS volumes,
                (SELECT count(*) FROM workspace_storage_bindings b JOIN workspace_volumes v USING (volume_id)
                  WHERE v.environment_id = $1) AS bindings,
                (SELECT count(*) FROM environment_journal WHERE environment_id = $1) AS journal,
                (SELECT count(*) FROM outbox WHERE environment_id = $1) AS outbox,
                (SELECT count(*) FROM provider_attempts WHERE environment_id = $1) AS attempts,
                (SELECT count(*) FROM runtime_profile_mappings WHERE environment_id = $1) AS mappings`,
        [s.environmentId],
      )
    ).rows[0];

  it('answers the lease and the Workspace record held with it, and nothing secret', async () => {
    const { s, token, profileId } = await resolved('run-context');
    const rows = await rowsOf(s);
    const res = await context(s, token, profileId);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const text = await res.text();
    const body = JSON.parse(text) as Context;

    const lease = (
      await handle.db.query<{
        operationId: string;
        lifecycleGeneration: number;
        providerFence: number;
        resourceId: string;
        providerOptions: Record<string, unknown>;
      }>(
        `SELECT operation_id AS "operationId", lifecycle_generation AS "lifecycleGeneration",
                provider_fence AS "providerFence", resource->>'resourceId' AS "resourceId",
                provider_options AS "providerOptions"
           FROM sandbox_leases WHERE environment_id = $1 AND resource_generation = 1`,
        [s.environmentId],
      )
    ).rows[0]!;
    const binding = (
      await handle.db.query<{ providerId: string; namespace: string; name: string; uid: string }>(
        `SELECT storage_provider_id AS "providerId", pvc_namespace AS namespace, pvc_name AS name,
                pvc_uid AS uid FROM workspace_storage_bindings WHERE volume_id = $1`,
        [s.volume.volumeId],
      )
    ).rows[0]!;
    const volume = await volumeRow(s.volume.volumeId);
    expect(volume?.attachedLease).toBe(1);

    expect(body).toEqual({
      environmentId: s.environmentId,
      profileId,
      lease: {
        operationId: lease.operationId,
        lifecycleGeneration: lease.lifecycleGeneration,
        resourceGeneration: 1,
        providerFence: lease.providerFence,
        resourceId: lease.resourceId,
      },
      workspace: {
        volumeId: s.volume.volumeId,
        state: 'Attached',
        transitionRevision: volume?.revision,
        resourceGeneration: s.volume.resourceGeneration,
        dataGeneration: s.volume.dataGeneration,
        storage: {
          providerId: binding.providerId,
          pvc: { namespace: binding.namespace, name: binding.name, uid: binding.uid },
        },
        mount: { path: '/workspace', readOnly: false },
      },
      networkPolicyGeneration: 1,
    });
    // Created at revision 1, attached by the lease's reservation: 2.
    expect(body.workspace.transitionRevision).toBe(2);

    // No provider option value, credential, or release descriptor.
    const options = Object.values(lease.providerOptions).filter((v): v is string => typeof v === 'string');
    expect(options).toContain('simulated');
    for (const value of options.filter((v) => v.length > 1)) expect(text).not.toContain(value);
    expect(text).not.toContain(token);
    expect(text).not.toMatch(/option|credential|release|secret|token|password/i);

    expect(await rowsOf(s)).toEqual(rows);
  });

  it('is refused as the profile read is, and answers no-store every time', async () => {
    const { s, token, profileId } = await resolved('run-refusals');
    const rows = await rowsOf(s);
    const refusals: [string, Promise<Response>, number, string][] = [
      ['no run binding', context(s, s.token, profileId), 403, 'run-binding-required'],
      ['another run', context(s, await runToken('run-other'), profileId), 403, 'run-binding-required'],
      [
        'no token',
        h.request('GET', `${s.base}/runtime-bootstrap/profiles/${profileId}/workspace`),
        401,
        'unauthenticated',
      ],
      ['an unknown profile', context(s, token, `rp_${'a'.repeat(52)}`), 404, 'runtime-profile-not-found'],
      ['a source profile ID', context(s, token, 'codex'), 400, 'invalid-request'],
    ];
    for (const [what, pending, status, type] of refusals) {
      const res = await pending;
      expect(res.status, what).toBe(status);
      expect(res.headers.get('cache-control'), what).toBe('no-store');
      expect(res.headers.get('content-type'), what).toBe('application/problem+json');
      expect((await problemOf(res)).type, what).toBe(`urn:sandlot:problem:${type}`);
    }

    // Bob may read the run's selection but did not resolve the profile; Carol may not read it.
    await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-refusals', subject: 'bob' });
    const foreign = await context(s, await runToken('run-refusals', 'bob'), profileId);
    expect(foreign.status).toBe(403);
    expect((await problemOf(foreign)).type).toBe('urn:sandlot:problem:runtime-profile-actor-mismatch');
    await seedProject(h, {
      tenant: 'acme',
      project: 'checkout',
      run: 'run-refusals',
      subject: 'carol',
      permissions: ['ReadProjects'],
    });
    const unauthorized = await context(s, await runToken('run-refusals', 'carol'), profileId);
    expect(unauthorized.status).toBe(403);
    expect(unauthorized.headers.get('cache-control')).toBe('no-store');
    expect((await problemOf(unauthorized)).type).toBe('urn:sandlot:problem:forbidden');

    // Another tenant, even with every permission on a project and run of the same names: not found.
    await seedProject(h, { tenant: 'globex', project: 'checkout', run: 'run-refusals', subject: 'alice' });
    const otherTenant = await context(s, await runToken('run-refusals', 'alice', 'globex'), profileId);
    expect(otherTenant.status).toBe(404);
    expect(otherTenant.headers.get('cache-control')).toBe('no-store');
    expect((await problemOf(otherTenant)).type).toBe('urn:sandlot:problem:environment-not-found');

    expect(await rowsOf(s)).toEqual(rows);
  });

  it('refuses a Workspace record that is not Attached to the lease exactly as recorded', async () => {
    const { s, token, profileId } = await resolved('run-detached');
    const rows = await rowsOf(s);
    const { volumeId } = s.volume;
    const binding = (
      await handle.db.query<Record<string, string>>(
        `SELECT storage_provider_id, storage_options_revision, pvc_namespace, pvc_name, pvc_uid
           FROM workspace_storage_bindings WHERE volume_id = $1`,
        [volumeId],
      )
    ).rows[0]!;
    const cases: [string, string, string, string][] = [
      [
        'detached',
        `UPDATE workspace_volumes SET state = 'Available', attached_lease = NULL WHERE volume_id = $1`,
        `UPDATE workspace_volumes SET state = 'Attached', attached_lease = 1 WHERE volume_id = $1`,
        'detached',
      ],
      [
        'attached to another lease',
        `UPDATE workspace_volumes SET attached_lease = 7 WHERE volume_id = $1`,
        `UPDATE workspace_volumes SET attached_lease = 1 WHERE volume_id = $1`,
        'another-lease',
      ],
      [
        'at another data generation',
        `UPDATE workspace_volumes SET data_generation = data_generation + 1 WHERE volume_id = $1`,
        `UPDATE workspace_volumes SET data_generation = data_generation - 1 WHERE volume_id = $1`,
        'generation-mismatch',
      ],
      [
        'at another resource generation',
        `UPDATE workspace_volumes SET resource_generation = resource_generation + 1 WHERE volume_id = $1`,
        `UPDATE workspace_volumes SET resource_generation = resource_generation - 1 WHERE volume_id = $1`,
        'generation-mismatch',
      ],
      [
        'without its Storage binding',
        `DELETE FROM workspace_storage_bindings WHERE volume_id = $1`,
        `INSERT INTO workspace_storage_bindings (volume_id, storage_provider_id, storage_options_revision,
           pvc_namespace, pvc_name, pvc_uid) VALUES ($1, '${binding['storage_provider_id']}',
           '${binding['storage_options_revision']}', '${binding['pvc_namespace']}', '${binding['pvc_name']}',
           '${binding['pvc_uid']}')`,
        'storage-unbound',
      ],
    ];
    for (const [what, move, restore, reason] of cases) {
      await handle.db.query(move, [volumeId]);
      const res = await context(s, token, profileId);
      expect(res.status, what).toBe(409);
      expect(res.headers.get('cache-control'), what).toBe('no-store');
      expect(await problemOf(res), what).toMatchObject({
        type: 'urn:sandlot:problem:runtime-workspace-not-attached',
        reason,
        volumeId,
      });
      await handle.db.query(restore, [volumeId]);
    }
    expect((await context(s, token, profileId)).status).toBe(200);
    expect(await rowsOf(s)).toEqual(rows);
  });

  it('asks authority again inside the owner transaction, after its last read', async () => {
    const run = 'run-authority';
    const { s, profileId } = await resolved(run);
    const mapping = (await readProfileMapping(handle.db, profileId))!;
    const asked: { via: boolean; granted: boolean }[] = [];
    let grant = true;
    const authority: ProjectsAuthority = {
      async permissions(caller, projectId, via) {
        asked.push({ via: via !== undefined, granted: grant });
        return grant ? h.authority.permissions(caller, projectId, via) : new Set();
      },
    };
    // The profile read has passed already (it is stubbed); only the transaction's own ask is left.
    const reader = new RuntimeWorkspaceContextReader({
      db: h.db,
      authority,
      selections: h.selections,
      profiles: { read: () => Promise.resolve(mapping) },
    });
    const caller = { tenantId: 'acme', subject: 'alice', runBinding: { projectId: 'checkout', runId: run } };
    const address = { projectId: 'checkout', runId: run, environmentId: s.environmentId };
    expect((await reader.read(caller, address, profileId)).workspace.state).toBe('Attached');
    expect(asked).toEqual([{ via: true, granted: true }]);
    grant = false;
    await expect(reader.read(caller, address, profileId)).rejects.toMatchObject({ code: 'forbidden' });
    expect(asked).toHaveLength(2);
  });

  it('refuses the profile of an earlier lease, after release and after a new lease', async () => {
    const run = 'run-replaced';
    const { s, token, profileId: old } = await resolved(run);
    const first = await json<Context>(await context(s, token, old));
    const mapping = await readProfileMapping(handle.db, old);
    expect(mapping).not.toBeNull();

    const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
      token: s.token,
      body: { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'abandon-1' },
    });
    expect(abandoned.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    const released = await context(s, token, old);
    expect(released.status).toBe(409);
    expect(released.headers.get('cache-control')).toBe('no-store');
    expect(await problemOf(released)).toMatchObject({
      type: 'urn:sandlot:problem:runtime-profile-stale',
      reason: 'no-placement',
    });

    await provision(s, 'prov-2');
    const stale = await context(s, token, old);
    expect(stale.status).toBe(409);
    expect(await problemOf(stale)).toMatchObject({
      type: 'urn:sandlot:problem:runtime-profile-stale',
      reason: 'endpoint',
    });

    // Were the profile read passed (a lease moving between it and the owner transaction), the
    // transaction's own comparison refuses the earlier lease's profile.
    const reader = new RuntimeWorkspaceContextReader({
      db: h.db,
      authority: h.authority,
      selections: h.selections,
      profiles: { read: () => Promise.resolve(mapping!) },
    });
    const caller = { tenantId: 'acme', subject: 'alice', runBinding: { projectId: 'checkout', runId: run } };
    const address = { projectId: 'checkout', runId: run, environmentId: s.environmentId };
    await expect(reader.read(caller, address, old)).rejects.toMatchObject({
      code: 'runtime-workspace-lease-changed',
      reason: 'another-lease',
    });

    // The new lease's own profile reads the same volume, detached and attached again since.
    const fresh = await h.request('POST', `${s.base}/runtime-bootstrap/profiles/codex/resolve`, { token });
    const { profileId } = await json<{ profileId: string }>(fresh);
    expect(profileId).not.toBe(old);
    const res = await context(s, token, profileId);
    expect(res.status).toBe(200);
    const second = await json<Context>(res);
    expect(second.lease).toMatchObject({ resourceGeneration: 2 });
    expect(second.lease['operationId']).not.toBe(first.lease['operationId']);
    expect(second.workspace.volumeId).toBe(first.workspace.volumeId);
    expect(second.workspace.transitionRevision).toBe(first.workspace.transitionRevision + 2);
    expect(second.workspace.transitionRevision).toBe((await volumeRow(s.volume.volumeId))?.revision);
  });
});
