// A new lease on a Workspace a verified suspend flush moved (embedded mode with workers, PostgreSQL):
// the flush advanced the volume record D → D + 1 while storage's owner annotation still says D (a
// flush does not rewrite it). Once the placement is released the volume is Available at D + 1, and a
// provision naming D + 1 is admitted, since the volume's own Verified flush chains D to D + 1. One
// naming D is refused (the record moved on), as is storage annotated with a generation no verified
// flush chains to the record: 409, nothing reserved. A plain abandon after the flush detaches the
// volume at D + 1 too, and the same new lease is admitted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readVerifiedFlushGenerations } from '../../store/workspace-flushes.ts';
import { readVolume, type VolumeRow } from '../../store/workspaces.ts';
import type { Harness } from '../support/harness.ts';
import { waitForLease } from '../support/sandbox-flow.ts';
import { environmentRows, problemOf, provisionWith, slug } from '../support/sandbox-scenarios.ts';
import {
  activeSandbox,
  coreCommits,
  coreSuspends,
  flushVerified,
  flushBodyOf,
  openSuspendBackend,
  ownerAbandons,
  type ActiveSandbox,
  type SuspendBackend,
} from '../support/suspend-flow.ts';

let h: Harness;
let runs = 0;
const key = new Uint8Array(32).fill(11);

let backend: SuspendBackend;
beforeAll(async () => {
  backend = await openSuspendBackend({ key, workers: { reconcileEveryMs: 300 } });
  ({ h } = backend);
}, 120_000);
afterAll(() => backend.close());

interface Suspended {
  sandbox: ActiveSandbox;
  /** The volume's data generation before the flush. */
  D: number;
  /** The volume after the placement release: Available at D + 1. */
  volume: VolumeRow;
}

/** Active, flushed (verified) for Core's suspend operation, committed, and the placement released. */
async function suspended(): Promise<Suspended> {
  const sandbox = await activeSandbox(h, `run-flushed-provision-${++runs}`);
  const D = sandbox.volume.dataGeneration;
  const fenced = await coreSuspends(h, sandbox);
  const { evidence } = await flushVerified(h, sandbox, fenced);
  const operation = await coreCommits(h, sandbox, fenced.operationId, evidence);
  const released = await h.request('POST', '/internal/runtime/suspend/release-placement', {
    token: sandbox.s.token,
    body: { operation, evidence },
  });
  expect(released.status).toBe(200);
  const volume = (await readVolume(h.db, sandbox.volume.volumeId))!;
  expect(volume).toMatchObject({ state: 'Available', attachedLease: null, dataGeneration: D + 1 });
  return { sandbox, D, volume };
}

const annotated = async (volumeId: string) =>
  (
    await h.db.query<{ g: string }>(
      'SELECT pvc_data_generation AS g FROM embedded_workspace_storage WHERE volume_id = $1',
      [volumeId],
    )
  ).rows[0]?.g;

const provision = (f: Suspended, dataGeneration: number, idempotencyKey: string) =>
  h.request('POST', `${f.sandbox.s.base}/sandbox/provision`, {
    token: f.sandbox.s.token,
    body: provisionWith({ ...f.volume, dataGeneration }, idempotencyKey),
  });

/** A 409 problem of `code` that changed nothing the Environment owns, and left the volume as it was. */
async function refusedUnchanged(f: Suspended, send: () => Promise<Response>, code: string) {
  const before = await environmentRows(h.db, f.sandbox.s.environmentId);
  const res = await send();
  expect(res.status).toBe(409);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const problem = await problemOf(res);
  expect(slug(problem)).toBe(code);
  expect(await environmentRows(h.db, f.sandbox.s.environmentId)).toEqual(before);
  expect(before.leases.map((l) => l.state)).toEqual(['Released']);
  expect(before.attempts.filter((a) => a.kind === 'provision')).toHaveLength(1);
  expect(await readVolume(h.db, f.volume.volumeId)).toEqual(f.volume);
  return problem;
}

describe('provisioning a Workspace a verified suspend flush moved', () => {
  it('admits a new lease at D + 1 and refuses one naming D, reserving nothing', async () => {
    const f = await suspended();
    // Storage still records the claim's generation; the record moved with the verified flush.
    expect(await annotated(f.volume.volumeId)).toBe(String(f.D));
    expect(await readVerifiedFlushGenerations(h.db, f.volume.volumeId)).toEqual([f.D]);

    await refusedUnchanged(f, () => provision(f, f.D, 'prov-stale'), 'workspace-unavailable');

    const res = await provision(f, f.D + 1, 'prov-resume');
    expect(res.status).toBe(202);
    const lease = await waitForLease(h, f.sandbox.s, (l) => l['state'] === 'Active');
    expect(lease['resourceGeneration']).toBe(f.sandbox.lease.resourceGeneration + 1);
    expect(await readVolume(h.db, f.volume.volumeId)).toMatchObject({
      state: 'Attached',
      attachedLease: lease['resourceGeneration'],
      dataGeneration: f.D + 1,
    });
    // Admission pins nothing new and rewrites no annotation.
    expect(await annotated(f.volume.volumeId)).toBe(String(f.D));
  });

  it('admits D + 1 after the owner abandons the flushed sandbox instead of a suspend release', async () => {
    const sandbox = await activeSandbox(h, `run-flushed-provision-${++runs}`);
    const D = sandbox.volume.dataGeneration;
    const fenced = await coreSuspends(h, sandbox);
    const flushed = await h.request(
      'POST',
      `${sandbox.s.base}/workspace-volumes/${sandbox.volume.volumeId}/flush`,
      { token: sandbox.s.token, body: flushBodyOf(fenced, sandbox.volume) },
    );
    expect(flushed.status).toBe(200);
    const { s } = sandbox;
    await ownerAbandons(h, sandbox, 'owner-abandon');
    const volume = (await readVolume(h.db, sandbox.volume.volumeId))!;
    expect(volume).toMatchObject({ state: 'Available', attachedLease: null, dataGeneration: D + 1 });

    const res = await provision({ sandbox, D, volume }, D + 1, 'prov-after-abandon');
    expect(res.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active');
  });

  it('refuses storage annotated with a generation no verified flush chains to the record', async () => {
    const f = await suspended();
    const storage = (g: string) =>
      h.db.query('UPDATE embedded_workspace_storage SET pvc_data_generation = $2 WHERE volume_id = $1', [
        f.volume.volumeId,
        g,
      ]);

    // Behind the flushed generation by one step no flush covers.
    await storage(String(f.D - 1));
    const gap = await refusedUnchanged(
      f,
      () => provision(f, f.D + 1, 'prov-gap'),
      'workspace-storage-mismatch',
    );
    expect(gap['checks']).toEqual([
      {
        code: 'workspace-storage-mismatch',
        message: expect.stringContaining(
          `data generation ${f.D - 1}, not ${f.D + 1} (no verified flush of the volume from ${f.D - 1} to ${f.D})`,
        ) as string,
      },
    ]);

    // Ahead of the record.
    await storage(String(f.D + 2));
    const ahead = await refusedUnchanged(
      f,
      () => provision(f, f.D + 1, 'prov-ahead'),
      'workspace-storage-mismatch',
    );
    expect(ahead.detail).toContain(`data generation ${f.D + 2}, not ${f.D + 1} (ahead of the volume)`);

    // Back to what storage recorded at the claim: the verified flush chains it, admitted.
    await storage(String(f.D));
    expect((await provision(f, f.D + 1, 'prov-chained')).status).toBe(202);
    await waitForLease(h, f.sandbox.s, (l) => l['state'] === 'Active');
  });
});
