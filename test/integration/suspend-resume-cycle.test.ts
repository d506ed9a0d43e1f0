// The whole suspend/resume cycle through the real HTTP app on PostgreSQL, embedded mode: resolve →
// flush → placement release → resume prepare → verify, Core played by the embedded RuntimeCore
// stand-in and the AgentHost by the embedded Host with a real Workspace tree on disk. The tree hash
// the flush receipt carries is the tree hash the new Host computes after resume; each step replayed
// answers the same without a second effect; a changed tree fails verify; a resume without the saved
// configuration acknowledgment is refused before any effect.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import type { ResumeManifest } from '../../actors/resume/requests.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { readCurrentLease, readLeaseByOperation } from '../../store/leases.ts';
import { readVolume } from '../../store/workspaces.ts';
import type { Harness } from '../support/harness.ts';
import {
  expectPrepared,
  prepareResume,
  suspended as suspendedSandbox,
  type Suspended,
} from '../support/resume-flow.ts';
import { openSuspendBackend, type ActiveSandbox, type SuspendBackend } from '../support/suspend-flow.ts';

let h: Harness;
let host: EmbeddedAgentHost;
let runs = 0;

let backend: SuspendBackend;
beforeAll(async () => {
  backend = await openSuspendBackend();
  ({ h, host } = backend);
}, 120_000);
afterAll(() => backend.close());

const post = (sandbox: ActiveSandbox, path: string, body: unknown) =>
  h.request('POST', path, { token: sandbox.s.token, body });

const suspended = (change: Partial<ResumeManifest> = {}) =>
  suspendedSandbox(h, host, `run-cycle-${++runs}`, change);
const prepare = (s: Suspended) => prepareResume(h, s);

describe('suspend and resume', () => {
  it('resumes from exactly the flushed data: the new Host hashes the tree the flush receipt named', async () => {
    const s = await suspended();
    const { sandbox, manifest } = s;
    const res = await prepare(s);
    if (res.status !== 200) throw new Error(await res.text());
    expect(res.headers.get('cache-control')).toBe('no-store');
    const { prepared, restored } = await expectPrepared(res, manifest);
    const lease = (await readCurrentLease(h.db, sandbox.s.environmentId))!;
    expect(lease).toMatchObject({ operationId: restored.lease.operationId, state: 'Active' });
    expect(lease.operationId).not.toBe(sandbox.lease.operationId);

    const verify = () =>
      post(sandbox, '/internal/runtime/resume/verify', { ...s.request, restoredWorkspace: restored });
    const verified = await verify();
    if (verified.status !== 200) throw new Error(await verified.text());
    const receipt = (await verified.json()) as {
      contentProof: { treeHash: string; fileCount: number };
      networkPolicyGeneration: number;
    };
    expect(receipt.contentProof.treeHash).toBe(manifest.workspace.treeHash);
    expect(receipt.contentProof.fileCount).toBe(manifest.workspace.fileCount);
    expect(receipt.networkPolicyGeneration).toBe(2);

    // Replays: the same placement, the lifecycle advanced once, one new lease; the same proof.
    const again = await prepare(s);
    expect(await again.json()).toEqual(prepared);
    const leases = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM sandbox_leases WHERE environment_id = $1',
      [sandbox.s.environmentId],
    );
    expect(leases.rows[0]?.n).toBe(2);
    const advances = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM environment_journal WHERE environment_id = $1 AND event_type = 'environment.advance'`,
      [sandbox.s.environmentId],
    );
    expect(advances.rows[0]?.n).toBe(1);
    const reverified = await verify();
    // A fresh observation each time: the same content, computed again.
    expect(((await reverified.json()) as typeof receipt).contentProof).toMatchObject({
      treeHash: receipt.contentProof.treeHash,
      fileCount: receipt.contentProof.fileCount,
    });

    // A Workspace that changed since the flush is not the one Core suspended.
    await writeFile(join(await host.workspaceDirectory(sandbox.volume.volumeId), 'stray.txt'), 'x');
    const changed = await verify();
    expect(changed.status).toBe(409);
    expect(((await changed.json()) as { type: string }).type).toBe(
      'urn:sandlot:problem:resume-tree-hash-mismatch',
    );
  });

  it('refuses a resume without the saved configuration acknowledgment before any effect', async () => {
    const s = await suspended({ configuration: null });
    const res = await post(s.sandbox, '/internal/runtime/resume/prepare', s.request);
    expect(res.status).toBe(422);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(((await res.json()) as { type: string }).type).toBe(
      'urn:sandlot:problem:resume-configuration-missing',
    );
    const source = await readLeaseByOperation(h.db, s.sandbox.lease.operationId);
    expect(source?.state).toBe('Released');
    expect(await readCurrentLease(h.db, s.sandbox.s.environmentId)).toBeNull();
    expect((await readVolume(h.db, s.sandbox.volume.volumeId))?.state).toBe('Available');
    const env = await h.db.query<{ lifecycle_generation: number }>(
      'SELECT lifecycle_generation FROM environments WHERE environment_id = $1',
      [s.sandbox.s.environmentId],
    );
    expect(env.rows[0]?.lifecycle_generation).toBe(s.manifest.source.lifecycleGeneration);
  });

  it('refuses evidence Core did not save, and a prepare that names a restored Workspace', async () => {
    const s = await suspended();
    const other = { ...s.request, hostReceiptSha256: 'f'.repeat(64) };
    const refused = await post(s.sandbox, '/internal/runtime/resume/prepare', other);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { type: string }).type).toBe(
      'urn:sandlot:problem:resume-not-confirmed',
    );
    expect(sha256Hex(canonicalJson(s.manifest))).toHaveLength(64);
    expect(await readCurrentLease(h.db, s.sandbox.s.environmentId)).toBeNull();
  });
});
